import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    // Forks, not threads: e2e tests start servers and child processes, and each file gets a clean process.
    pool: 'forks',
    // Most files wait on sockets, child processes and real-time audio rather than compute (the suite uses
    // well under one core of two): vitest's default of one worker on 2 cores would leave it mostly idle.
    maxWorkers: 4,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The JSON report is what .ci/run reads for its "N passed, M failed" line.
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
