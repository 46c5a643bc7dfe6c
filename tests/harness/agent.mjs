// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// The node agent as a fixture of the harness tests (as tests/integration/agent_fx.h does it):
// the real binary ($BM_BIN agent) on a private socket, state directory and bpffs pin
// directory, a child of the test; stopped, and checked gone, at the end.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

export const BM_BIN = process.env.BM_BIN;
export const WORKLOADS = process.env.BM_WORKLOADS;

if (!BM_BIN || !WORKLOADS)
	throw new Error('BM_BIN and BM_WORKLOADS must name build/burstmeter and build/workloads');

export function get(sock, path, timeoutMs = 5000) {
	return new Promise((resolve, reject) => {
		const req = http.request({ socketPath: sock, path, method: 'GET', timeout: timeoutMs }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (c) => (body += c));
			res.on('end', () => resolve({ status: res.statusCode, body: body ? JSON.parse(body) : null }));
		});
		req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
		req.on('error', reject);
		req.end();
	});
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Start an agent; resolves once GET /v1/healthz answers 200. opts.config(dir): the config's
// text, written in the agent's directory dir before it starts (default: pressure never queues).
export async function startAgent(tag, opts = {}) {
	const dir = mkdtempSync(`/tmp/bm-${tag}.`);
	const sock = join(dir, 'api.sock');
	const pins = `/sys/fs/bpf/${tag}-${process.pid}`;
	const log = join(dir, 'agent.log');
	const cfg = join(dir, 'agent.yaml');
	// admission by the node's pressure is not under test: other work on the machine must not queue ours
	writeFileSync(cfg, opts.config ? opts.config(dir) : 'admit_cpu_pressure: 100\nadmit_mem_available: 0\n');
	const fd = openSync(log, 'a');
	const child = spawn(BM_BIN, ['agent', '--config', cfg, '--socket', sock, '--state-dir', join(dir, 'state'),
		'--pin-dir', pins, '--metrics', ''], { stdio: ['ignore', fd, fd] });
	let exited = null;
	child.on('exit', (code, sig) => (exited = { code, sig }));
	for (let t = 0; ; t += 50) {
		if (exited)
			throw new Error(`the agent exited (${JSON.stringify(exited)}) before it was ready:\n${readFileSync(log, 'utf8')}`);
		if (existsSync(sock)) {
			try {
				if ((await get(sock, '/v1/healthz')).status === 200)
					break;
			} catch { /* not listening yet */ }
		}
		if (t > 10000) {
			child.kill('SIGKILL');
			throw new Error(`the agent did not answer in 10 s:\n${readFileSync(log, 'utf8')}`);
		}
		await sleep(50);
	}
	return {
		sock, dir, pins, log,
		// SIGTERM, SIGKILL after 10 s; its pins must be gone (it removes them with no effect left)
		async stop() {
			if (!exited) {
				child.kill('SIGTERM');
				for (let t = 0; !exited && t < 10000; t += 50)
					await sleep(50);
				if (!exited) {
					child.kill('SIGKILL');
					await sleep(200);
				}
			}
			const left = existsSync(pins);
			const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
			rmSync(dir, { recursive: true, force: true });
			if (left) {
				rmSync(pins, { recursive: true, force: true });
				throw new Error(`the agent left its pins at ${pins}`);
			}
			if (exited.code !== 0)
				throw new Error(`the agent exited ${JSON.stringify(exited)}:\n${text}`);
		},
	};
}
