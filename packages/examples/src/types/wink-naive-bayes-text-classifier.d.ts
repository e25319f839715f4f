// Types for wink-naive-bayes-text-classifier 2.x (the package ships none): the parts we use.
declare module 'wink-naive-bayes-text-classifier' {
  interface NaiveBayesTextClassifier {
    defineConfig(config: { considerOnlyPresence?: boolean; smoothingFactor?: number }): boolean;
    definePrepTasks(tasks: Array<(input: unknown) => unknown>): number;
    /** `input` is text (with prep tasks) or, as here, an array of tokens. */
    learn(input: string | string[], label: string): boolean;
    consolidate(): boolean;
    /** `[label, log2 odds]` pairs, best first; `[['unknown', 0]]` when no token is known. */
    computeOdds(input: string | string[]): Array<[string, number]>;
    predict(input: string | string[]): string;
    stats(): { labelWiseSamples: Record<string, number>; labelWiseWords: Record<string, number>; vocabulary: number };
    exportJSON(): string;
    importJSON(json: string): boolean;
    reset(): boolean;
  }
  function naiveBayesTextClassifier(): NaiveBayesTextClassifier;
  export = naiveBayesTextClassifier;
}
