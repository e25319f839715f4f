// ESLint for the whole tree: typescript-eslint's type-checked rules, with the types of each file
// taken from the tsconfig.json nearest to it (projectService). Formatting is Prettier's job;
// eslint-config-prettier, last, switches off every rule that would fight it.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '**/dist/',
      '**/*.compiled.mjs',
      '**/node_modules/',
      '**/.turbo/',
      'coverage/',
      'out/',
      'tests/readme/*.generated.ts',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          // The root's TypeScript config files, which no package tsconfig.json includes, and the
          // plain-JavaScript preload worker processes of the tracing test import before tsx.
          allowDefaultProject: ['*.config.ts', 'tests/tracing/*.mjs', 'tests/clock/*.mjs'],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // The two habits we check above all: a promise nobody awaits loses its rejection; a type-only
      // import that is not marked `type` keeps a module (and maybe a cycle) alive at run time.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // A leading underscore marks a parameter a subclass or a signature needs but this body does
      // not (`post(_shared, _prepRes, execRes)`), and a field dropped by a rest destructuring.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Passing on a caught or abort reason as it is keeps what the user threw (a string, an
      // AbortSignal's reason); wrapping it would change the error the caller sees.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // Off: `BaseNode<any, any>` is how a graph holds nodes whatever their shared and params
      // types; `unknown` would not accept them (a method's parameters are contravariant). The
      // no-unsafe-* rules still stop an `any` value from spreading in src.
      '@typescript-eslint/no-explicit-any': 'off',
      // Off: an `async` method without `await` is how we implement a Promise-returning contract
      // (Engine, Mailbox, AsyncNode): dropping `async` would turn a rejection into a synchronous
      // throw, a change of behaviour.
      '@typescript-eslint/require-await': 'off',
      // Off: its 40 findings were all function-valued members declared with method syntax
      // (wink-nlp's `its.*`, vitest's expectTypeOf, test harnesses made of closures), none of
      // which reads `this`; rewriting their types is churn without value.
      '@typescript-eslint/unbound-method': 'off',
      // Off: in typescript-eslint 8.74 it also reports assertions that steer a generic's inference
      // (`engine.start(flow, {} as WaitOnceShared)`) or fix a variable's declared type
      // (`const b = value as Partial<BackoffOptions> | null`); most of its 59 findings were such,
      // and its autofix broke the typecheck in 8 files.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // Tests and benches read parsed JSON and YAML, keep loosely typed stores
    // (`Record<string, any>`) and use vitest's asymmetric matchers, which are typed `any`; a value
    // of the wrong shape fails its assertion anyway.
    files: ['**/test/**', 'tests/**', '**/bench/**'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain JavaScript (this file, the CLI shim) is not in any tsconfig: no type-aware rules.
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly' },
    },
  },
  prettier,
);
