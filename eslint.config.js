import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/snapshot/gen/**', 'ui/**', 'coverage/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['better-sqlite3', 'pg'], message: 'Drivers are imported only inside src/store providers.' }],
      }],
    },
  },
  {
    files: ['src/store/**', 'test/**', 'bench/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
);
