import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FlowDefinition } from '@queueflow/runtime';
import { isAgentDefinition, isFlowDefinition, type AgentDefinition } from '@queueflow/runtime/kernel';

/**
 * Imports a module and returns the FlowDefinitions it exports (named exports and the default
 * export, which may also be an array of definitions). A `.ts` module is loaded through `tsx`
 * when it is installed.
 *
 * @param modulePath - a file path, relative to the working directory, or a package specifier.
 * @throws Error naming the module when it cannot be imported or exports no flow.
 */
export async function loadFlows(modulePath: string): Promise<FlowDefinition[]> {
  return (await loadFlowsModule(modulePath)).flows;
}

/**
 * Imports a flows module and returns the FlowDefinitions and the AgentDefinitions (`defineAgent`)
 * it exports, as {@link loadFlows} does.
 *
 * @throws Error naming the module when it cannot be imported or exports neither a flow nor an agent.
 */
export async function loadFlowsModule(
  modulePath: string,
): Promise<{ flows: FlowDefinition[]; agents: AgentDefinition<any>[] }> {
  const onDisk = existsSync(modulePath);
  if (onDisk && statSync(modulePath).isDirectory()) {
    throw new Error(
      `flows module '${modulePath}' is a directory: pass the module file that exports the flows (e.g. dist/flows.js)`,
    );
  }
  const isPath = onDisk || modulePath.startsWith('.') || isAbsolute(modulePath) || /\.[cm]?[jt]sx?$/.test(modulePath);
  const specifier = isPath ? pathToFileURL(resolve(modulePath)).href : modulePath;
  if (/\.[cm]?tsx?$/.test(modulePath)) await registerTypeScript(modulePath);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    const notFound = (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && !onDisk;
    const reason = notFound
      ? `no such file under ${process.cwd()}${isPath ? '' : ', and no installed package of that name'}`
      : (error as Error).message;
    throw new Error(`cannot import flows module '${modulePath}': ${reason}`, { cause: error });
  }
  const candidates = Object.values(loaded).flatMap((value) => (Array.isArray(value) ? (value as unknown[]) : [value]));
  const flows = [...new Set(candidates.filter(isFlowDefinition))];
  const agents = [...new Set(candidates.filter(isAgentDefinition))];
  if (flows.length === 0 && agents.length === 0) {
    throw new Error(
      `flows module '${modulePath}' exports no flow: export the results of defineFlow(name, build) (or of defineAgent)`,
    );
  }
  return { flows, agents };
}

async function registerTypeScript(modulePath: string): Promise<void> {
  try {
    const tsx = (await import('tsx/esm/api' as string)) as { register(): unknown };
    tsx.register();
  } catch {
    throw new Error(
      `flows module '${modulePath}' is TypeScript: install tsx (npm i -D tsx) or pass the compiled .js module`,
    );
  }
}
