// The idempot-dev compliance suite against a real idem serve (docs/conformance.md):
//   node run.mjs IDEM_BIN REPO_DIR
// Runs idempot-dev/idempotency.feature (a vendored copy; when ../shared/conformance/idempot-dev/
// sits beside the repository, its copy must be the same bytes) with steps.mjs, then compares
// the scenarios that failed with the list of those that differ by design (differs.txt, each
// also named in docs/conformance.md). Fails when a scenario outside the list fails (a
// regression) and when one on the list passes (the list and the docs must say so).
import { loadConfiguration, runCucumber } from '@cucumber/cucumber/api';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [idemBin, repo] = process.argv.slice(2);
if (!idemBin || !repo) {
  console.error('usage: node run.mjs IDEM_BIN REPO_DIR');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const feature = join(here, 'idempot-dev', 'idempotency.feature');
let problems = 0;
const problem = message => {
  console.error(`FAIL: ${message}`);
  ++problems;
};

const shared = resolve(repo, '..', 'shared', 'conformance', 'idempot-dev');
if (existsSync(shared)) {
  for (const f of ['idempotency.feature', 'LICENSE']) {
    if (!readFileSync(join(shared, f)).equals(readFileSync(join(here, 'idempot-dev', f))))
      problem(`tests/conformance/idempot-dev/${f} differs from ${join(shared, f)}: copy it again`);
  }
} else {
  console.log(`(${shared} is not there: the vendored copy is used)`);
}

// "Scenario name # why" lines; blank lines and lines starting with # are comments.
const differs = new Map();
for (const line of readFileSync(join(here, 'differs.txt'), 'utf8').split('\n')) {
  if (!line.trim() || line.startsWith('#')) continue;
  const [name, why = ''] = line.split(' # ');
  differs.set(name.trim(), why.trim());
}
const docs = readFileSync(join(repo, 'docs', 'conformance.md'), 'utf8');
for (const name of differs.keys()) if (!docs.includes(name)) problem(`docs/conformance.md does not name "${name}"`);

process.env.IDEM_BIN = resolve(idemBin);
const { runConfiguration } = await loadConfiguration({
  provided: { paths: [feature], import: [join(here, 'steps.mjs')], format: ['progress'], strict: true },
});
const names = new Map();  // pickle id → scenario name
const pickleOf = new Map();  // test case id → pickle id
const started = new Map();  // test case started id → test case id
const failed = new Set();
const seen = new Set();
await runCucumber(runConfiguration, { cwd: here }, message => {
  if (message.pickle) names.set(message.pickle.id, message.pickle.name);
  if (message.testCase) pickleOf.set(message.testCase.id, message.testCase.pickleId);
  if (message.testCaseStarted) started.set(message.testCaseStarted.id, message.testCaseStarted.testCaseId);
  if (message.testStepFinished) {
    const name = names.get(pickleOf.get(started.get(message.testStepFinished.testCaseStartedId)));
    seen.add(name);
    if (message.testStepFinished.testStepResult.status !== 'PASSED') failed.add(name);
  }
});

const passed = [...seen].filter(n => !failed.has(n));
if (names.size !== 49) problem(`${names.size} scenarios, not the 49 of the suite`);
if (new Set(names.values()).size !== names.size) problem('two scenarios share a name');
for (const name of failed)
  if (!differs.has(name)) problem(`"${name}" fails and is not listed in tests/conformance/differs.txt`);
for (const name of differs.keys()) {
  if (!seen.has(name)) problem(`"${name}" is listed but not in the suite`);
  else if (!failed.has(name)) problem(`"${name}" passes now: take it off differs.txt and docs/conformance.md`);
}
console.log(`\nidempot-dev: ${passed.length} of ${seen.size} scenarios pass; ${failed.size} fail, ${differs.size} listed as differing by design`);
process.exit(problems ? 1 : 0);
