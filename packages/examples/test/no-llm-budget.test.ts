/**
 * Issue 31: without `--llm` no try of the summarise node calls a model, so its `llm` budget does
 * not apply: `flow.run` says nothing about limits it does not keep (`npm start` prints no
 * warning). Its own file: `flow.run` warns once per node name and process.
 */
import { setWarningHandler } from '@queueflow/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { runDocumentPipeline, sampleCorpus } from '../src/index.js';

describe('the llm budget without --llm', () => {
  afterEach(() => setWarningHandler(null));

  it('warns nothing embedded', async () => {
    const warnings: string[] = [];
    setWarningHandler((code) => warnings.push(code));
    const result = await runDocumentPipeline(sampleCorpus(5));
    expect(result.records).toHaveLength(5);
    expect(warnings).toEqual([]);
  });
});
