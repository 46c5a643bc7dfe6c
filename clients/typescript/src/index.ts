// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/**
 * A client of the burstmeter agent's HTTP/JSON API on its Unix socket, on Node's `http`
 * alone: submit an execution request, wait for its outcome, stream its events, cancel it.
 * Refusals are typed errors: InvalidRequestError (400, every bad field), ForbiddenError
 * (403), NotFoundError (404), ConflictError (409), TooManyRequestsError (429, retryAfterS).
 *
 *   const c = new BurstmeterClient();
 *   const out = await c.run({ id: 'tc-42', argv: ['make', 'test'], sandbox: { pids_limit: 256 } });
 *   if (out.termination.reason === 'pids_ceiling') ...   // out.retry.advice says what to change
 */
import http from 'node:http';

export const DEFAULT_SOCKET = '/run/burstmeter/api.sock';

export type Quantity = number | string;
export type NetworkPolicy = 'none' | 'egress_restricted' | 'egress_allow_list' | 'full';
export type State = 'queued' | 'running' | 'throttled' | 'frozen' | 'succeeded' | 'failed' | 'cancelled' | 'killed'
	| 'deadline_exceeded';
/** termination.reason: effect/outcome.c's table, in its order */
export type Reason = 'completed' | 'failed' | 'signaled' | 'deadline' | 'memory_ceiling' | 'pids_ceiling'
	| 'cpu_ceiling' | 'net_ceiling' | 'cancelled' | 'meter_error' | 'storage_ceiling' | 'io_ceiling';
export const REASONS: readonly Reason[] = ['completed', 'failed', 'signaled', 'deadline', 'memory_ceiling',
	'pids_ceiling', 'cpu_ceiling', 'net_ceiling', 'cancelled', 'meter_error', 'storage_ceiling', 'io_ceiling'];
export const FINAL_STATES: readonly State[] = ['succeeded', 'failed', 'cancelled', 'killed', 'deadline_exceeded'];

export interface Sandbox {
	cpu_request?: Quantity;
	cpu_limit?: Quantity;
	memory_request?: Quantity;
	memory_limit?: Quantity;
	pids_limit?: number;
	timeout_seconds?: Quantity;
	max_ephemeral_storage?: Quantity;
	io_read_bps?: Quantity;
	io_write_bps?: Quantity;
	io_iops?: number;
	network_policy?: NetworkPolicy;
	allowed_egress_cidrs?: string[];
	read_only_root_fs?: boolean;
	run_as_non_root?: boolean;
	drop_all_capabilities?: boolean;
	/** an absolute directory, bound read-write (the rest read-only with read_only_root_fs) */
	workspace?: string;
}

/** POST /v1/effects: a command to launch (argv), or a process of the caller's to attach (pid). */
export interface EffectRequest {
	id: string;
	argv?: string[];
	pid?: number;
	env?: Record<string, string>;
	cwd?: string;
	intent?: string;
	priority?: number;
	labels?: Record<string, string>;
	window_ms?: number;
	tenant?: string;
	sandbox?: Sandbox;
	/** declared intent: cpu_cores, memory_bytes, pids, net_tx_bytes_per_s, net_tx_bytes, wall_seconds */
	expect?: Record<string, Quantity>;
	/** attach: the tool kind it runs (else argv[0]'s basename) */
	tool?: string;
	/** W3C trace context: kept in the outcome's trace, TRACEPARENT for the command */
	traceparent?: string;
}

export interface Peak {
	cpu_cores: number;
	memory_bytes: number;
	pids: number;
	net_tx_bytes_per_s: number;
	runq_delay_ms: number;
}

export interface Limits {
	cpu_cores: number | null;
	memory_bytes: number | null;
	pids: number | null;
	timeout_seconds: number | null;
}

export interface Action {
	at_ms: number;
	action: string;
	reason: string;
	observed: number;
	threshold: number;
}

/** burstmeter.outcome/v1 (DESIGN.md): the contract's fields; the agent may add more. */
export interface Outcome {
	schema: 'burstmeter.outcome/v1';
	id: string;
	tenant: string;
	intent: string;
	command: string[];
	started_at: string;
	wall_seconds: number;
	window_ms: number;
	limits: Limits;
	peak: Peak;
	average: Partial<Peak>;
	totals: Record<string, number>;
	actions: Action[];
	throttled_seconds: number;
	frozen_seconds: number;
	exit: { code: number | null; signal: number | null };
	termination: { reason: Reason; by: string };
	retry: { eligible: boolean; after_ms: number; advice: string };
	/** the request's declared intent against what was used (only when it declared any) */
	expect?: { declared: Record<string, number>; observed: Record<string, number>; exceeded: string[] };
	/** the request's W3C trace context (only when it had one) */
	trace?: { traceparent: string };
	[more: string]: unknown;
}

export interface Effect {
	id: string;
	state: State;
	outcome?: Outcome;
	[more: string]: unknown;
}

export type Event =
	| { type: 'state'; state: State; at_ms?: number }
	| { type: 'window'; window: number; t_ms: number; cpu_cores: number; memory_bytes: number; pids: number;
		net_tx_bytes_per_s: number; runq_delay_ms: number }
	| ({ type: 'action' } & Action)
	| { type: 'outcome'; outcome: Outcome };

export interface FieldError {
	field: string;
	error: string;
}

/** The agent refused (status > 0) or could not be reached (status 0: AgentUnavailableError). */
export class BurstmeterError extends Error {
	constructor(readonly status: number, message: string, readonly body: Record<string, unknown> = {}) {
		super(status ? `${status}: ${message}` : message);
		this.name = new.target.name;
	}
}
export class InvalidRequestError extends BurstmeterError {
	readonly fields: FieldError[];
	constructor(status: number, message: string, body: Record<string, unknown>) {
		super(status, message, body);
		this.fields = Array.isArray(body.fields) ? (body.fields as FieldError[]) : [];
		this.message = `400: ${this.fields.map((f) => `${f.field}: ${f.error}`).join('; ')}`;
	}
}
export class ForbiddenError extends BurstmeterError {}
export class NotFoundError extends BurstmeterError {}
export class ConflictError extends BurstmeterError {}
export class TooManyRequestsError extends BurstmeterError {
	constructor(status: number, message: string, body: Record<string, unknown>, readonly retryAfterS: number) {
		super(status, message, body);
	}
}
export class AgentUnavailableError extends BurstmeterError {}

function refusal(status: number, body: Record<string, unknown>, retryAfter: string | undefined): BurstmeterError {
	const msg = typeof body.error === 'string' ? body.error : http.STATUS_CODES[status] ?? 'error';
	switch (status) {
	case 400: return new InvalidRequestError(status, msg, body);
	case 403: return new ForbiddenError(status, msg, body);
	case 404: return new NotFoundError(status, msg, body);
	case 409: return new ConflictError(status, msg, body);
	case 429: return new TooManyRequestsError(status, msg, body, Number(retryAfter ?? 0));
	default: return new BurstmeterError(status, msg, body);
	}
}

export interface ClientOptions {
	/** the agent's socket: default $BURSTMETER_SOCKET, then /run/burstmeter/api.sock */
	socketPath?: string;
	/** per call, ms (default 10 s) */
	timeoutMs?: number;
	/** root only: act for this tenant */
	tenant?: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class BurstmeterClient {
	readonly socketPath: string;
	readonly timeoutMs: number;
	readonly tenant: string | undefined;

	constructor(opts: ClientOptions = {}) {
		this.socketPath = opts.socketPath ?? (process.env.BURSTMETER_SOCKET || DEFAULT_SOCKET);
		this.timeoutMs = opts.timeoutMs ?? 10000;
		this.tenant = opts.tenant;
	}

	private path(p: string): string {
		return this.tenant ? `${p}${p.includes('?') ? '&' : '?'}tenant=${encodeURIComponent(this.tenant)}` : p;
	}

	private open(method: string, p: string, body: unknown, timeoutMs: number | undefined): Promise<http.IncomingMessage> {
		const data = body === undefined ? undefined : JSON.stringify(body);
		return new Promise((resolve, reject) => {
			const req = http.request({
				socketPath: this.socketPath, path: this.path(p), method,
				headers: { 'Content-Type': 'application/json', Connection: 'close',
					...(data ? { 'Content-Length': Buffer.byteLength(data) } : {}) },
				...(timeoutMs ? { timeout: timeoutMs } : {}),
			}, resolve);
			req.on('timeout', () => req.destroy(new Error(`${method} ${p}: no answer in ${timeoutMs} ms`)));
			req.on('error', (e) => reject(new AgentUnavailableError(0, `no agent at ${this.socketPath}: ${e.message}`)));
			req.end(data);
		});
	}

	private async call<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
		const res = await this.open(method, p, body, this.timeoutMs);
		let text = '';
		res.setEncoding('utf8');
		for await (const chunk of res)
			text += chunk;
		const doc = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
		const status = res.statusCode ?? 0;
		if (status >= 400) {
			const ra = res.headers['retry-after'];
			throw refusal(status, doc, Array.isArray(ra) ? ra[0] : ra);
		}
		return { status, body: doc as T };
	}

	health(): Promise<{ status: string; running: number; queued: number; adopted: boolean; [k: string]: unknown }> {
		return this.call<{ status: string; running: number; queued: number; adopted: boolean }>('GET', '/v1/healthz')
			.then((r) => r.body);
	}

	/** 201 running, 202 queued, 200 the same id again (created false); throws on a refusal. */
	async submit(req: EffectRequest): Promise<Effect & { created: boolean }> {
		const body = { ...req, mode: req.pid !== undefined ? 'attach' : 'launch', sandbox: req.sandbox ?? {} };
		const r = await this.call<Effect>('POST', '/v1/effects', body);
		return { ...r.body, created: r.status !== 200 };
	}

	async get(id: string): Promise<Effect> {
		return (await this.call<Effect>('GET', `/v1/effects/${encodeURIComponent(id)}`)).body;
	}

	async list(opts: { state?: State; limit?: number } = {}): Promise<Effect[]> {
		const q = new URLSearchParams();
		if (opts.state)
			q.set('state', opts.state);
		if (opts.limit)
			q.set('limit', String(opts.limit));
		const s = q.toString();
		return (await this.call<{ effects: Effect[] }>('GET', `/v1/effects${s ? `?${s}` : ''}`)).body.effects;
	}

	/** SIGTERM to every process of it now, cgroup.kill after the grace; ConflictError once it has ended. */
	async cancel(id: string): Promise<Effect> {
		return (await this.call<Effect>('POST', `/v1/effects/${encodeURIComponent(id)}/cancel`)).body;
	}

	/** Until the effect has ended: its outcome. Rejects after timeoutMs (default: never). */
	async wait(id: string, timeoutMs?: number, pollMs = 50): Promise<Outcome> {
		const end = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
		for (;;) {
			const e = await this.get(id);
			if (FINAL_STATES.includes(e.state) && e.outcome)
				return e.outcome;
			if (Date.now() > end)
				throw new Error(`effect ${id} still ${e.state} after ${timeoutMs} ms`);
			await sleep(pollMs);
		}
	}

	/** submit, then wait. */
	async run(req: EffectRequest, timeoutMs?: number): Promise<Outcome> {
		await this.submit(req);
		return this.wait(req.id, timeoutMs);
	}

	/** Every event of the effect until its outcome (the last one). */
	async *stream(id: string): AsyncGenerator<Event, void, undefined> {
		const res = await this.open('GET', `/v1/effects/${encodeURIComponent(id)}/events`, undefined, undefined);
		const status = res.statusCode ?? 0;
		res.setEncoding('utf8');
		if (status >= 400) {
			let text = '';
			for await (const chunk of res)
				text += chunk;
			throw refusal(status, text ? JSON.parse(text) : {}, undefined);
		}
		let buf = '';
		try {
			for await (const chunk of res) {
				buf += chunk;
				let nl: number;
				while ((nl = buf.indexOf('\n')) >= 0) {
					const line = buf.slice(0, nl).trim();
					buf = buf.slice(nl + 1);
					if (!line)
						continue;
					const ev = JSON.parse(line) as Event;
					yield ev;
					if (ev.type === 'outcome')
						return;
				}
			}
		} finally {
			res.destroy();
		}
	}
}
