import fc from 'fast-check';
import { parserProperties } from './parserProperties';

/**
 * `npm run fuzz [-- RUNS [SEED]]`: every parser property with many more inputs and a fresh seed,
 * printing executions and findings (a failing input, shrunk, with the seed to replay it).
 */
function main(argv: string[]): number {
  const runs = Number(argv[0] ?? 20_000);
  const seed = argv[1] !== undefined ? Number(argv[1]) : Date.now() % 0x7fffffff;
  let findings = 0;
  let executions = 0;
  const started = Date.now();
  console.log(`fuzz: ${parserProperties.length} properties, ${runs} inputs each, seed ${seed}`);
  for (const p of parserProperties) {
    const t0 = Date.now();
    const details = p.check({ seed, numRuns: runs });
    executions += details.numRuns;
    const ms = Date.now() - t0;
    if (details.failed) {
      findings++;
      const error =
        details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      console.log(
        `FINDING  ${p.name}\n  after ${details.numRuns} inputs; replay with seed ${details.seed} ` +
          `path ${details.counterexamplePath}\n  input: ${fc.stringify(details.counterexample)}\n  ` +
          `error: ${error}`,
      );
    } else {
      console.log(`ok       ${p.name}: ${details.numRuns} inputs in ${ms} ms`);
    }
  }
  console.log(
    `fuzz: ${executions} executions in ${((Date.now() - started) / 1000).toFixed(1)} s, ${findings} finding(s)`,
  );
  return findings > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
