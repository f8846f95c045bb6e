import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // oclif writes through process.stdout; without this vitest swallows it (oclif/test#655).
    disableConsoleIntercept: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
})
