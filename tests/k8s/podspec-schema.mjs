// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// The Pods and NetworkPolicies `burstmeter podspec` writes for the golden requests
// (tests/fixtures/pods/spec/*.request.json with their .args), checked offline against
// the Kubernetes OpenAPI schema as npm's kubernetes-models compiles it, and strictly:
// a field the schema does not have is an error (the API server would drop it with a
// warning: a misspelled readOnlyRootFilesystem would leave the root writable). The
// YAML (read as YAML 1.1, as kubectl's reader does) must equal the JSON. Then the
// checks are shown to refuse what they should. TAP on stdout.
// Usage (from the install dir, so that the packages resolve):
//   node podspec-schema.mjs BURSTMETER FIXTURE_DIR NODE_MODULES
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';
import { Pod } from 'kubernetes-models/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';

const [bin, fixtures, modules] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (good, what, why = '') => {
	n++;
	if (!good) failed++;
	console.log(`${good ? 'ok' : 'not ok'} ${n} - ${what}${good || !why ? '' : `\n# ${why}`}`);
};

// --- the models' fields, from their .d.ts: `"name"?: Type;` lines of `export interface`
const models = new Map();
function fields(file) {
	if (models.has(file)) return models.get(file);
	const text = readFileSync(file, 'utf8'), imports = new Map(), map = new Map();
	for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
		const from = m[2].startsWith('.') ? join(dirname(file), m[2]) : join(modules, m[2]);
		imports.set(m[1], from.replace(/\.js$/, '') + '.d.ts');
	}
	const body = text.match(/^export interface \w+(?: extends \w+)? \{\n([\s\S]*?)^\}/m);
	if (!body) throw new Error(`no interface in ${file}`);
	for (const m of body[1].matchAll(/^ {4}"([^"]+)"\??: (.+?);?$/gm)) {
		const t = m[2].match(/^(?:Array<)?(\w+)>?$/);
		map.set(m[1], t && imports.has(t[1]) ? imports.get(t[1]) : null);
	}
	models.set(file, map);
	return map;
}

// Every key of v a field of its model, all the way down (maps and quantities are leaves).
function strict(v, file, path, errs) {
	if (Array.isArray(v)) return v.forEach((x, i) => strict(x, file, `${path}[${i}]`, errs));
	if (v === null || typeof v !== 'object') return;
	const f = fields(file);
	for (const [k, x] of Object.entries(v)) {
		if (!f.has(k)) errs.push(`${path}.${k}: no such field`);
		else if (f.get(k)) strict(x, f.get(k), `${path}.${k}`, errs);
	}
	return errs;
}

const kinds = {
	Pod: { model: Pod, dts: join(modules, 'kubernetes-models/v1/Pod.d.ts') },
	NetworkPolicy: {
		model: NetworkPolicy,
		dts: join(modules, 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy.d.ts'),
	},
};

// Schema errors of one object, [] if none.
function check(obj) {
	const k = kinds[obj.kind];
	if (!k) return [`unexpected kind ${obj.kind}`];
	try {
		new k.model(obj).validate();
	} catch (e) {
		return [e.message];
	}
	return strict(obj, k.dts, obj.kind, []);
}

function podspec(name, json) {
	const args = readFileSync(join(fixtures, `${name}.args`), 'utf8').split('\n').filter((s) => s);
	return execFileSync(bin, ['podspec', ...args, ...(json ? ['--json'] : []),
		join(fixtures, `${name}.request.json`)], { encoding: 'utf8' });
}

const cases = readdirSync(fixtures).filter((f) => f.endsWith('.request.json') && !f.startsWith('bad-'))
	.map((f) => f.replace(/\.request\.json$/, '')).sort();
let seed;
for (const c of cases) {
	const list = JSON.parse(podspec(c, true));
	ok(list.apiVersion === 'v1' && list.kind === 'List' && Array.isArray(list.items) &&
	   list.items[0]?.kind === 'Pod', `${c}: a v1 List with the Pod first`);
	const docs = YAML.parseAllDocuments(podspec(c, false), { version: '1.1' });
	const errs = docs.flatMap((d) => d.errors.map((e) => e.message));
	ok(!errs.length && isDeepStrictEqual(docs.map((d) => d.toJS()), list.items),
	   `${c}: the YAML reads back (YAML 1.1) as the JSON`, errs.join('; '));
	for (const item of list.items) {
		const e = check(item);
		ok(!e.length, `${c}: ${item.kind} ${item.metadata.name} passes the schema, strictly`,
		   e.join('; '));
	}
	if (c === 'seed') seed = list.items;
}
ok(cases.length >= 5 && seed?.length === 2, `${cases.length} golden requests, seed among them`);

// --- the checks refuse what they should (or they prove nothing)
const mutate = (i, f) => { const o = structuredClone(seed[i]); f(o); return check(o); };
const controls = [
	['activeDeadlineSeconds as a string', 0, (p) => { p.spec.activeDeadlineSeconds = '600'; }],
	['a misspelled readOnlyRootFileSystem', 0,
		(p) => { p.spec.containers[0].securityContext.readOnlyRootFileSystem = true; }],
	['a cpu limit that is no quantity', 0, (p) => { p.spec.containers[0].resources.limits.cpu = {}; }],
	['a container without a name', 0, (p) => { delete p.spec.containers[0].name; }],
	['an unknown volume source field', 0, (p) => { p.spec.volumes[0].emptyDir.size = '1Gi'; }],
	['policyTypes not a list', 1, (np) => { np.spec.policyTypes = 'Egress'; }],
	['an ipBlock without a cidr', 1, (np) => { delete np.spec.egress[1].to[0].ipBlock.cidr; }],
	['a port in the wrong place', 1, (np) => { np.spec.egress[0].to[0].port = 53; }],
];
for (const [what, i, f] of controls) ok(mutate(i, f).length > 0, `control: ${what} is refused`);

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
