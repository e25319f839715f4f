import { Command, Option } from 'commander';
import { toMermaid } from '@queueflow/runtime';

/** `queueflow graph <flow>`: the flow's graph as a Mermaid flowchart. Runs no application code beyond building the graph. */
export function graphCommand(): Command {
  return new Command('graph')
    .argument('<flow>', 'flow name')
    .description("print a flow's graph as a Mermaid flowchart (node ids as runs report them)")
    .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
    .addOption(new Option('--direction <direction>', 'flowchart direction').choices(['TD', 'LR']).default('TD'))
    .action(async (flow: string, options: { flows: string; direction: 'TD' | 'LR' }) => {
      const { loadFlows } = await import('../load-flows.js');
      const flows = await loadFlows(options.flows);
      const definition = flows.find((candidate) => candidate.name === flow);
      if (!definition)
        throw new Error(
          `flows module '${options.flows}' has no flow '${flow}' (it has: ${flows.map((f) => f.name).join(', ')})`,
        );
      console.log(toMermaid(definition, { direction: options.direction }));
    });
}
