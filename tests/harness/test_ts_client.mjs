// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// clients/typescript (compiled by tsc --strict into BUILD_DIR/ts-client) against a real agent:
// submit, wait, stream and cancel, and each refusal as its typed error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
	AgentUnavailableError, BurstmeterClient, ConflictError, ForbiddenError, InvalidRequestError, NotFoundError,
	REASONS, TooManyRequestsError,
} from '../ts-client/index.js';
import { WORKLOADS, startAgent } from './agent.mjs';

const wl = (name) => `${WORKLOADS}/${name}`;
let agent, c, seq = 0;
const uid = (what) => `ts-${what}-${process.pid}-${++seq}`;

before(async () => {
	agent = await startAgent('bm-tsclient');
	c = new BurstmeterClient({ socketPath: agent.sock });
});
after(async () => agent?.stop());

test('typescript: health', async () => {
	const h = await c.health();
	assert.equal(h.status, 'ok');
	assert.equal(typeof h.running, 'number');
});

test('typescript: submit and wait: a launched effect\'s outcome', async () => {
	const req = { id: uid('done'), argv: [wl('bm-memtouch'), '64', '300'], intent: 'touch 64 MiB',
		sandbox: { memory_limit: '256Mi', timeout_seconds: 30 } };
	const e = await c.submit(req);
	assert.equal(e.created, true);
	const o = await c.wait(req.id, 30000);
	assert.equal(o.termination.reason, 'completed');
	assert.equal(o.exit.code, 0);
	assert.equal(o.limits.memory_bytes, 256 * 2 ** 20);
	assert.ok(o.peak.memory_bytes >= 64 * 2 ** 20 && o.peak.memory_bytes < 128 * 2 ** 20, `${o.peak.memory_bytes}`);
	assert.equal((await c.submit(req)).created, false);
	assert.ok((await c.list({ limit: 50 })).some((x) => x.id === req.id));
});

test('typescript: declared intent against observed, and the trace context', async () => {
	const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
	const req = { id: uid('intent'), argv: ['/bin/sh', '-c', `test "$TRACEPARENT" = ${tp}`],
		expect: { memory_bytes: '1Mi', wall_seconds: 30 }, traceparent: tp };
	await c.submit(req);
	const o = await c.wait(req.id, 30000);
	assert.equal(o.termination.reason, 'completed');
	assert.deepEqual(o.trace, { traceparent: tp });
	assert.deepEqual(o.expect.declared, { memory_bytes: 2 ** 20, wall_seconds: 30 });
	assert.ok(o.expect.exceeded.includes('memory_bytes'));
});

test('typescript: stream: windows while it runs, then the outcome', async () => {
	const id = uid('stream');
	await c.submit({ id, argv: [wl('bm-spike'), '40', '100', '8'] });
	const events = [];
	for await (const ev of c.stream(id))
		events.push(ev);
	const windows = events.filter((e) => e.type === 'window');
	assert.equal(events.at(-1).type, 'outcome');
	assert.ok(windows.length > 20, `${windows.length} windows`);
	assert.ok(Math.max(...windows.map((w) => w.cpu_cores)) > 0.5);
	assert.equal(events.at(-1).outcome.termination.reason, 'completed');
});

test('typescript: cancel a running effect; a second cancel is a ConflictError', async () => {
	const id = uid('cancel');
	await c.submit({ id, argv: [wl('bm-sleeper'), '30000'] });
	const t0 = Date.now();
	await c.cancel(id);
	const o = await c.wait(id, 15000);
	assert.equal(o.termination.reason, 'cancelled');
	assert.ok(Date.now() - t0 < 10000);
	await assert.rejects(c.cancel(id), (e) => e instanceof ConflictError && e.status === 409);
});

test('typescript: 400 names every bad field', async () => {
	await assert.rejects(c.submit({ id: 'bad id!', argv: ['/bin/true'],
		sandbox: { memory_limit: '12x', network_policy: 'sometimes' } }), (e) => {
		assert.ok(e instanceof InvalidRequestError);
		assert.deepEqual(e.fields.map((f) => f.field).sort(), ['id', 'sandbox.memory_limit', 'sandbox.network_policy']);
		return true;
	});
});

test('typescript: 403 for a process not the caller\'s, 404 for an unknown id', async () => {
	await assert.rejects(c.submit({ id: uid('pid1'), pid: 1 }), ForbiddenError);
	await assert.rejects(c.get(uid('nothing')), NotFoundError);
});

test('typescript: REASONS (the Reason type) is the outcome\'s reason table, in its order', () => {
	const c = readFileSync(`${process.env.BM_SRC}/user/effect/outcome.c`, 'utf8');
	const table = [...c.matchAll(/\[BM_REASON_[A-Z_]+\] = "([a-z_]+)"/g)].map((m) => m[1]);
	assert.ok(table.length >= 12, `${table.length} reasons read`);
	assert.deepEqual([...REASONS], table);
});

test('typescript: 429 with Retry-After once a tool keeps hitting the same ceiling', async () => {
	let o;
	for (let i = 0; i < 2; i++) {
		o = await c.run({ id: uid('fan'), argv: [wl('bm-fanout'), '16', '300'], sandbox: { pids_limit: 8 } }, 30000);
		assert.equal(o.termination.reason, 'pids_ceiling');
	}
	assert.ok(o.retry.after_ms > 0);
	await assert.rejects(c.submit({ id: uid('fan'), argv: [wl('bm-fanout'), '2', '10'], sandbox: { pids_limit: 8 } }),
		(e) => e instanceof TooManyRequestsError && e.retryAfterS >= 1 && /backing off/.test(e.message));
});

test('typescript: no agent on the socket is AgentUnavailableError', async () => {
	await assert.rejects(new BurstmeterClient({ socketPath: `${agent.sock}.none` }).health(), AgentUnavailableError);
});
