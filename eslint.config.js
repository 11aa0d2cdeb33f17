// Type-aware lint: floating promises are the bug class that bites a proxy and a store most.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'reports/**', '.stryker-tmp/**', 'test/summary-reporter.cjs', 'scripts/**', 'fixtures/**', 'eslint.config.js', '.dependency-cruiser.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // The pages' browser scripts have their own project (lib dom, no node).
  { files: ['web/**/*.ts'], languageOptions: { parserOptions: { project: './web/tsconfig.json' } } },
);
