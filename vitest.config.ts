import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: run files in parallel, but not so many that the end-to-end runs starve.
    maxWorkers: 2,
    // .ci/run asks for a JSON report beside the console one, to print "N passed, N failed".
    ...(process.env.DARKROOM_VITEST_JSON
      ? { reporters: ['default', 'json'], outputFile: { json: process.env.DARKROOM_VITEST_JSON } }
      : {}),
  },
});
