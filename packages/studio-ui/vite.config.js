import { defineConfig } from 'vite';

// The studio's page. `base: './'` makes every URL in the build relative: the server writes a
// `<base href>` for the path it is mounted under, so one build serves any mount path.
export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Mermaid is large and loaded only on a run's page; it stays in chunks of its own.
    chunkSizeWarningLimit: 2500,
  },
});
