/*
 * A Vitest reporter that lists every skipped test by name at the end of a run, so a skip is
 * seen rather than only counted. (Beside the default reporter: vitest.config.ts.) Where the
 * real parts are required (SWITCHYARD_REQUIRE_REAL_PARTS=1, .ci/run) a test needing one
 * fails instead of skipping; see test/support/real-parts.ts.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SkipReport implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const skipped = modules.flatMap((module) =>
      [...module.children.allTests('skipped')].map((test) => `  ${module.relativeModuleId} > ${test.fullName}`),
    );
    if (skipped.length === 0) return;
    process.stdout.write(
      `\n${skipped.length} skipped test${skipped.length === 1 ? '' : 's'}:\n${skipped.join('\n')}\n`,
    );
  }
}
