// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// `burstmeter mcp` driven by the official MCP TypeScript SDK over its stdio client
// transport, against a real agent: once as a 2025-11-25 client (@modelcontextprotocol/sdk,
// which opens with initialize) and once as a 2026-07-28 client (@modelcontextprotocol/client
// pinned to that revision: no initialize, every request carries its _meta). Each: the
// handshake, the tool list, a call that completes (with progress), calls that hit a memory
// and a task ceiling, one cancelled mid-run by the client and one by cancel_effect, and bad
// arguments (a JSON-RPC error naming the field). Then one call with no agent (standalone).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdio } from '@modelcontextprotocol/client/stdio';
import { BM_BIN, WORKLOADS, get, startAgent } from './agent.mjs';

const wl = (name) => `${WORKLOADS}/${name}`;
const TOOLS = ['run_command', 'get_effect', 'cancel_effect', 'node_pressure'];
let agent;
const stderr = [];

// one agent per era: the agent backs off a tool that keeps hitting the same ceiling (each
// call is its command's tool kind to it: bm-balloon, bm-fanout), so one era's kills would
// refuse the other era's calls of that tool
after(async () => {
	await agent?.stop();
});

async function connect(era, args) {
	const params = { command: BM_BIN, args: ['mcp', ...args], stderr: 'pipe' };
	const info = { name: 'burstmeter-test', version: '1.0.0' };
	const client = era === 'legacy' ? new LegacyClient(info)
		: new ModernClient(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
	const transport = era === 'legacy' ? new LegacyStdio(params) : new ModernStdio(params);
	transport.stderr?.on('data', (d) => stderr.push(String(d)));
	await client.connect(transport);
	return client;
}

// callTool with the same arguments on both SDKs (v1 takes a result schema second)
function call(client, era, name, args, opts = {}) {
	return era === 'legacy' ? client.callTool({ name, arguments: args }, undefined, opts)
		: client.callTool({ name, arguments: args }, opts);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let seq = 0;
const uid = (what) => `t-${what}-${process.pid}-${++seq}`;

// The effect's cgroup is gone once its call has answered: nothing of it is left behind.
function assertCleaned(sc) {
	const cg = sc.outcome?.cgroup;
	assert.ok(cg, 'the outcome names its cgroup');
	assert.ok(!existsSync(cg), `${cg} was left behind`);
}

for (const era of ['legacy', 'modern']) {
	let client;

	test(`${era}: handshake`, async () => {
		agent = await startAgent(`bm-mcp-${era}`);
		client = await connect(era, ['--socket', agent.sock]);
		assert.equal(client.getServerVersion().name, 'burstmeter');
		assert.ok(client.getServerCapabilities().tools, 'tools capability');
		assert.match(client.getInstructions(), /run_command/);
		if (era === 'modern')
			assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
	});

	test(`${era}: tools/list`, async () => {
		const { tools } = await client.listTools();
		assert.deepEqual(tools.map((t) => t.name), TOOLS);
		const run = tools.find((t) => t.name === 'run_command');
		assert.equal(run.outputSchema.type, 'object');
		assert.ok(run.inputSchema.properties.limits.properties.pids);
	});

	test(`${era}: a call that completes, with progress`, async () => {
		const progress = [];
		const id = uid('done');
		const r = await call(client, era, 'run_command', {
			id, command: `echo out-$((6 * 7)); echo err-line >&2; ${wl('bm-spike')} 40 100 15`,
			intent: 'a test that completes', expectations: { memory: '1G' },
		}, { onprogress: (p) => progress.push(p) });
		const sc = r.structuredContent;
		assert.equal(r.isError, false, r.content[0].text);
		assert.match(r.content[0].text, /^completed in \d+\.\d+ s \(exit 0\); peak cpu/);
		assert.equal(sc.reason, 'completed');
		assert.equal(sc.state, 'succeeded');
		assert.equal(sc.via, 'agent');
		assert.equal(sc.stdout, 'out-42\n');
		assert.equal(sc.stderr, 'err-line\n');
		assert.equal(sc.exit_code, 0);
		assert.equal(sc.expectations.memory_bytes.exceeded, false);
		// 15 spikes of 40 ms: the meter saw about 0.6 s of CPU at up to one core
		assert.ok(sc.outcome.totals.cpu_seconds > 0.4 && sc.outcome.totals.cpu_seconds < 1.2,
			`cpu_seconds ${sc.outcome.totals.cpu_seconds}`);
		assert.ok(sc.outcome.peak.cpu_cores > 0.5, `peak cpu ${sc.outcome.peak.cpu_cores}`);
		assert.ok(progress.length >= 1, 'progress notifications while it ran');
		for (let i = 1; i < progress.length; i++)
			assert.ok(progress[i].progress > progress[i - 1].progress, 'progress increases');
		assert.ok(progress.some((p) => /last .* cpu \d+\.\d+ cores/.test(p.message)), progress.map((p) => p.message).join('\n'));
		assertCleaned(sc);
		const g = await call(client, era, 'get_effect', { id });
		assert.equal(g.structuredContent.state, 'succeeded');
		assert.match(g.content[0].text, /^completed/);
	});

	test(`${era}: a call killed at its memory ceiling`, async () => {
		// 1 GiB/s up to 512 MiB against a 128 MiB ceiling
		const r = await call(client, era, 'run_command', {
			argv: [wl('bm-balloon'), '1024', '512', '200'], limits: { memory: '128Mi' },
			expectations: { memory: '64M' },
		});
		const sc = r.structuredContent;
		assert.equal(r.isError, true);
		assert.equal(sc.reason, 'memory_ceiling');
		assert.match(r.content[0].text, /^killed: memory_ceiling at 128 MiB after \d+\.\d+ s; retry with a smaller working set or limits\.memory >= 192M;/);
		assert.match(r.content[0].text, /beyond what was expected: memory_bytes/);
		assert.equal(sc.retry.eligible, false);
		assert.equal(sc.expectations.memory_bytes.exceeded, true);
		assert.ok(sc.outcome.peak.memory_bytes >= 100 * 2 ** 20, `peak ${sc.outcome.peak.memory_bytes}`);
		assertCleaned(sc);
	});

	test(`${era}: a traceparent reaches the command and the outcome; a shell line is its first word's tool`, async () => {
		const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
		const id = uid('trace');
		const r = await call(client, era, 'run_command', {
			id, command: 'printf %s "$TRACEPARENT"', traceparent: tp, expectations: { wall_seconds: 30, pids: 64 },
		});
		const sc = r.structuredContent;
		assert.equal(r.isError, false, r.content[0].text);
		assert.equal(sc.stdout, tp);
		assert.equal(sc.outcome.trace.traceparent, tp);
		assert.deepEqual(sc.outcome.command, ['/bin/sh', '-c', 'printf %s "$TRACEPARENT"']);
		assert.deepEqual(sc.outcome.expect.declared, { pids: 64, wall_seconds: 30 });
		assert.equal(sc.expectations.wall_seconds.exceeded, false);
		const g = await call(client, era, 'get_effect', { id });
		assert.equal(g.structuredContent.effect.tool, 'printf');
		await assert.rejects(call(client, era, 'run_command', { argv: ['/bin/true'], traceparent: '00-x' }),
			(e) => e.code === -32602 && /traceparent/.test(e.message));
	});

	test(`${era}: a call killed at its task ceiling`, async () => {
		const r = await call(client, era, 'run_command', { argv: [wl('bm-fanout'), '16', '300'], limits: { pids: 8 } });
		const sc = r.structuredContent;
		assert.equal(r.isError, true);
		assert.equal(sc.reason, 'pids_ceiling');
		assert.match(r.content[0].text, /^killed: pids_ceiling at 8 tasks after \d+\.\d+ s; retry with less parallelism/);
		assert.equal(sc.outcome.limits.pids, 8);
		assertCleaned(sc);
	});

	test(`${era}: a deadline, and a command that is not there`, async () => {
		const r = await call(client, era, 'run_command', { argv: [wl('bm-sleeper'), '10000'], timeout_seconds: 1 });
		assert.equal(r.structuredContent.reason, 'deadline');
		assert.ok(r.structuredContent.outcome.wall_seconds < 5, `${r.structuredContent.outcome.wall_seconds}`);
		assert.match(r.content[0].text, /^deadline: stopped at its 1\.00 s timeout; raise timeout_seconds/);
		const nf = await call(client, era, 'run_command', { argv: ['no-such-command-here'] });
		assert.equal(nf.structuredContent.exit_code, 127);
		assert.match(nf.content[0].text, /^failed: exit 127: 'no-such-command-here' was not found; fix the command/);
	});

	test(`${era}: a call cancelled mid-run by the client (notifications/cancelled)`, async () => {
		const id = uid('abort');
		const ac = new AbortController();
		const t0 = Date.now();
		const p = call(client, era, 'run_command', { id, argv: [wl('bm-sleeper'), '30000'] },
			{ signal: ac.signal, onprogress: () => ac.abort('the user changed their mind') });
		await assert.rejects(p);
		// the server cancels the effect; the agent has its outcome within the grace
		let eff;
		for (let t = 0; t < 100; t++) {
			eff = (await call(client, era, 'get_effect', { id })).structuredContent;
			if (eff.effect.outcome)
				break;
			await sleep(100);
		}
		assert.equal(eff.state, 'cancelled');
		assert.equal(eff.effect.outcome.termination.reason, 'cancelled');
		assert.ok(Date.now() - t0 < 15000, 'it did not run its 30 s');
		assert.ok(eff.effect.outcome.wall_seconds < 10, `wall ${eff.effect.outcome.wall_seconds}`);
	});

	test(`${era}: a call cancelled by cancel_effect returns its outcome`, async () => {
		const id = uid('cancel');
		const p = call(client, era, 'run_command', { id, argv: [wl('bm-sleeper'), '30000'] });
		let c;
		for (let t = 0; t < 100; t++) {
			c = await call(client, era, 'cancel_effect', { id });
			if (!c.isError)
				break;
			await sleep(50);	// not there yet
		}
		assert.equal(c.isError, false, c.content[0].text);
		const r = await p;
		assert.equal(r.structuredContent.reason, 'cancelled');
		assert.match(r.content[0].text, /^cancelled after \d+\.\d+ s/);
		assertCleaned(r.structuredContent);
	});

	test(`${era}: bad arguments are a JSON-RPC error naming the field`, async () => {
		await assert.rejects(call(client, era, 'run_command', { argv: ['/bin/true'], limits: { memory: '12x' } }),
			(e) => e.code === -32602 && /limits\.memory/.test(e.message));
		await assert.rejects(call(client, era, 'run_command', { command: 'true', argv: ['true'] }),
			(e) => e.code === -32602 && /command: give argv or command, not both/.test(e.message));
		await assert.rejects(call(client, era, 'run_command', { argv: ['/bin/true'], timeout: 5 }),
			(e) => e.code === -32602 && /timeout: unknown field/.test(e.message));
		await assert.rejects(call(client, era, 'no_such_tool', {}), (e) => e.code === -32602);
	});

	test(`${era}: node_pressure: what the agent's admission sees`, async () => {
		const r = await call(client, era, 'node_pressure', {});
		const sc = r.structuredContent;
		const h = (await get(agent.sock, '/v1/healthz')).body;
		assert.equal(sc.source, 'agent');
		assert.ok(sc.memory_available_bytes > 0);
		assert.equal(typeof sc.agent.running, 'number');
		// the agent's own bounds (agent.mjs: admit_cpu_pressure 100, admit_mem_available 0), not the server's view
		assert.equal(sc.pressure.admit_cpu_pressure, 100);
		assert.equal(sc.pressure.admit_mem_available_bytes, 0);
		assert.equal(sc.pressure.action, h.pressure.action);
		assert.equal(sc.agent.max_running, h.max_running);
		assert.equal(sc.tenant.name, 'uid-0');
		assert.equal(sc.admits, true, r.content[0].text);
		assert.match(r.content[0].text, /^admits now: yes, because cpu pressure \d+\.\d+ % \(avg10 of \/proc\/pressure\/cpu\) is at most admit_cpu_pressure 100 %/);
		assert.match(r.content[0].text, /cpu pressure .* available; the agent runs \d+, \d+ queued$/);
	});

	test(`${era}: output capped end to end: head, the marker, tail`, async () => {
		// 200000 bytes of 'a', then a line: 1000 kept, the first and the last 500
		const r = await call(client, era, 'run_command', {
			command: "head -c 200000 /dev/zero | tr '\\0' a; echo; echo the-end; echo e >&2",
			max_output_bytes: 1000,
		});
		const sc = r.structuredContent;
		assert.equal(r.isError, false, r.content[0].text);
		assert.equal(sc.truncated, true);
		assert.equal(sc.stdout_bytes, 200000 + 1 + 8);
		assert.equal(sc.stderr, 'e\n');
		const m = sc.stdout.match(/^(a{500})\n?\[\.\.\. (\d+) bytes left out \.\.\.\]\n([^]*)$/);
		assert.ok(m, sc.stdout.slice(0, 600));
		assert.equal(Number(m[2]), sc.stdout_bytes - 1000);
		assert.equal(m[3], 'a'.repeat(500 - 9) + '\nthe-end\n');
		assert.ok(r.content.some((c) => /^stdout \(200009 bytes, the middle left out\):\n/.test(c.text)));
		// under the cap: whole, not marked
		const s = await call(client, era, 'run_command', { command: 'echo short', max_output_bytes: 1000 });
		assert.equal(s.structuredContent.truncated, false);
		assert.equal(s.structuredContent.stdout, 'short\n');
		await assert.rejects(call(client, era, 'run_command', { argv: ['/bin/true'], max_output_bytes: 2 ** 21 }),
			(e) => e.code === -32602 && /max_output_bytes/.test(e.message));
	});

	test(`${era}: network_policy none refuses a loopback connect that full allows; env reaches the command`, async () => {
		const seen = [];
		const srv = net.createServer((c) => { seen.push(1); c.end(); });
		await new Promise((res) => srv.listen(0, '127.0.0.1', res));
		const port = srv.address().port;
		const py = `import socket; socket.create_connection(("127.0.0.1", ${port}), 3).close(); print("connected")`;
		try {
			const full = await call(client, era, 'run_command', { argv: ['python3', '-c', py], network_policy: 'full' });
			assert.equal(full.isError, false, full.content[0].text + full.structuredContent.stderr);
			assert.equal(full.structuredContent.stdout, 'connected\n');
			assert.equal(seen.length, 1);
			const none = await call(client, era, 'run_command', { argv: ['python3', '-c', py], network_policy: 'none' });
			assert.equal(none.isError, true);
			assert.equal(none.structuredContent.reason, 'failed');
			assert.equal(none.structuredContent.exit_code, 1);
			assert.match(none.structuredContent.stderr, /(ConnectionRefused|Network is unreachable|OSError)/);
			assert.equal(none.structuredContent.outcome.sandbox.network_policy, 'none');
			assert.equal(seen.length, 1, 'the server saw no connection from the call with network_policy none');
		} finally {
			srv.close();
		}
		const e = await call(client, era, 'run_command', {
			command: 'printf "%s|%s" "$BM_TEST_VAR" "$BM_TEST_EMPTY"', env: { BM_TEST_VAR: 'two words', BM_TEST_EMPTY: '' },
		});
		assert.equal(e.structuredContent.stdout, 'two words|');
		await assert.rejects(call(client, era, 'run_command', { argv: ['/bin/true'], env: { BM_X: 5 } }),
			(err) => err.code === -32602 && /env/.test(err.message));
	});

	test(`${era}: the same ceiling again: the agent backs off, and the result says until when`, async () => {
		// a second pids_ceiling within 10 min: the agent refuses that tool's calls for 2 s (429, Retry-After)
		const kill = await call(client, era, 'run_command', { argv: [wl('bm-fanout'), '16', '300'], limits: { pids: 8 } });
		assert.equal(kill.structuredContent.reason, 'pids_ceiling');
		assert.match(kill.content[0].text, /1 earlier bm-fanout effect hit pids_ceiling in the last 10 min: wait 2 s/);
		// another tool is not held back by bm-fanout's walls (every attached call was "attach" once)
		const other = await call(client, era, 'run_command', { argv: ['/bin/true'] });
		assert.equal(other.isError, false, other.content[0].text);
		const r = await call(client, era, 'run_command', { argv: [wl('bm-fanout'), '2', '10'] });
		assert.equal(r.isError, true);
		assert.equal(r.structuredContent.state, 'refused');
		assert.equal(r.structuredContent.refused.status, 429);
		assert.ok(r.structuredContent.refused.retry_after_s >= 1, JSON.stringify(r.structuredContent.refused));
		assert.match(r.content[0].text, /^refused \(429\): the agent is backing off.*; retry after \d+ s$/);
	});

	test(`${era}: close`, async () => {
		await client.close();
		await agent.stop();
		agent = null;
	});
}

test('node_pressure: an agent over its cpu pressure says it does not admit now, and why', async () => {
	// a PSI file of the test's own at 95 % against admit_cpu_pressure 50 (as test_budgets does it)
	const psi = (avg10) => `some avg10=${avg10} avg60=${avg10} avg300=${avg10} total=1000\n` +
		'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n';
	let file;
	const a = await startAgent('bm-mcp-over', {
		config: (dir) => {
			file = join(dir, 'cpu.pressure');
			writeFileSync(file, psi('95.00'));
			return `admit_cpu_pressure: 50\nadmit_cpu_pressure_file: ${file}\nadmit_mem_available: 0\n`;
		},
	});
	let client;
	try {
		client = await connect('legacy', ['--socket', a.sock]);
		const r = await call(client, 'legacy', 'node_pressure', {});
		const sc = r.structuredContent;
		assert.equal(sc.admits, false, r.content[0].text);
		assert.equal(sc.pressure.over, true);
		assert.equal(sc.pressure.room, false);
		assert.equal(sc.pressure.cpu_some_avg10, 95);
		assert.equal(sc.pressure.admit_cpu_pressure, 50);
		assert.equal(sc.pressure.action, 'pause');
		assert.equal(typeof sc.pressure.cpu_some_1s, 'number');
		assert.match(r.content[0].text, new RegExp(`^admits now: no, because cpu pressure 95\\.00 % \\(avg10 of ${file}\\) ` +
			'is above admit_cpu_pressure 50 %; '));
		assert.match(sc.because, /^because cpu pressure 95\.00 %/);
		assert.equal(typeof sc.tenant.budgets, 'object');
		// the pressure falls: admission (and so the tool) sees it at its next look
		writeFileSync(file + '.tmp', psi('0.00'));
		renameSync(file + '.tmp', file);
		let again;
		for (let t = 0; t < 100; t++) {
			again = await call(client, 'legacy', 'node_pressure', {});
			if (again.structuredContent.admits)
				break;
			await sleep(100);
		}
		assert.equal(again.structuredContent.admits, true, again.content[0].text);
		assert.match(again.content[0].text, /^admits now: yes, because cpu pressure 0\.00 %/);
	} finally {
		await client?.close();
		await a.stop();
	}
});

test('standalone (no agent): a call that completes', async () => {
	const client = await connect('legacy', ['--standalone']);
	const r = await call(client, 'legacy', 'run_command', { argv: [wl('bm-memtouch'), '64', '200'] });
	const sc = r.structuredContent;
	assert.equal(r.isError, false, r.content[0].text + stderr.join(''));
	assert.equal(sc.via, 'standalone');
	assert.ok(sc.outcome.peak.memory_bytes >= 64 * 2 ** 20, `peak ${sc.outcome.peak.memory_bytes}`);
	assertCleaned(sc);
	const g = await call(client, 'legacy', 'get_effect', { id: sc.effect_id });
	assert.match(g.content[0].text, /^completed/);
	const p = await call(client, 'legacy', 'node_pressure', {});
	assert.equal(p.structuredContent.source, 'standalone');
	assert.equal(p.structuredContent.admits, true);
	assert.match(p.content[0].text, /^admits now: yes, because no agent runs: .* read by this server from \/proc\/pressure\/cpu/);
	await client.close();
});
