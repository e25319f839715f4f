import { QueryClient, QueryClientProvider } from '@tanstack/preact-query';
import { render } from 'preact';
import { App } from './app';
import { connectLiveEvents } from './live/live-events';
import './styles.css';

// Data changes only when the event stream says so: no refetch on focus or on a timer.
const client = new QueryClient({
  defaultOptions: {
    queries: { staleTime: Infinity, refetchOnWindowFocus: false, retry: 1 },
  },
});
connectLiveEvents(client);

render(
  <QueryClientProvider client={client}>
    <App />
  </QueryClientProvider>,
  document.getElementById('app')!,
);
