import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const dist = (file: string) => fileURLToPath(new URL(`./node_modules/xstate/dist/${file}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Test what runs in production: Vitest adds the "development" export condition, which
    // picks XState's development build, whose global "custom action" check misfires whenever
    // one actor's action synchronously drives another actor.
    alias: [
      { find: /^xstate$/, replacement: dist('xstate.esm.js') },
      { find: /^xstate\/graph$/, replacement: dist('xstate-graph.esm.js') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // The default output, then every skipped test by name: a skip is seen, not only counted.
    reporters: ['default', './test/support/skip-report.ts'],
  },
});
