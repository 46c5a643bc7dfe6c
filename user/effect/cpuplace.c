// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effect/cpuplace.h"

/*
 * Confined effects per CPU, in this process: the agent's (or one run's).
 * Only the agent's event loop places and releases effects.
 */
static unsigned int load[CPU_SETSIZE];

bool bm_cpuplace_confines(double cores, const cpu_set_t *allowed, unsigned int *k)
{
	unsigned int n = (unsigned int)CPU_COUNT(allowed);
	double need = ceil(cores - 1e-9);

	if (cores <= 0 || need >= n)
		return false;
	*k = need < 1 ? 1 : (unsigned int)need;
	return true;
}

void bm_cpuplace_least(const cpu_set_t *allowed, unsigned int k, cpu_set_t *out)
{
	unsigned int got;
	int cpu, best;

	CPU_ZERO(out);
	for (got = 0; got < k; got++) {
		best = -1;
		for (cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
			if (CPU_ISSET(cpu, allowed) && !CPU_ISSET(cpu, out) &&
			    (best < 0 || load[cpu] < load[best]))
				best = cpu;
		if (best < 0)
			break;
		CPU_SET(best, out);
	}
}

void bm_cpuplace_pick(const cpu_set_t *allowed, unsigned int k, cpu_set_t *out)
{
	bm_cpuplace_least(allowed, k, out);
	bm_cpuplace_hold(out);
}

void bm_cpuplace_hold(const cpu_set_t *set)
{
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set))
			load[cpu]++;
}

void bm_cpuplace_put(const cpu_set_t *set)
{
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set) && load[cpu])
			load[cpu]--;
}

unsigned int bm_cpuplace_load(unsigned int cpu)
{
	return cpu < CPU_SETSIZE ? load[cpu] : 0;
}

int bm_cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	int cpu, end, n;

	buf[0] = '\0';
	for (cpu = 0; cpu < CPU_SETSIZE; cpu = end + 1) {
		if (!CPU_ISSET(cpu, set)) {
			end = cpu;
			continue;
		}
		for (end = cpu; end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set); end++)
			;
		n = end > cpu ? snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", cpu, end)
			      : snprintf(buf + off, len - off, "%s%d", off ? "," : "", cpu);
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	return 0;
}

int bm_cpulist_parse(const char *s, cpu_set_t *out)
{
	unsigned long a, b;
	char *end;

	CPU_ZERO(out);
	while (*s && *s != '\n') {
		if (*s < '0' || *s > '9')
			goto bad;
		a = b = strtoul(s, &end, 10);
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				goto bad;
			b = strtoul(s, &end, 10);
		}
		if (a > b || b >= CPU_SETSIZE)
			goto bad;
		for (; a <= b; a++)
			CPU_SET(a, out);
		s = end;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			goto bad;
	}
	return 0;
bad:
	CPU_ZERO(out);
	return -EINVAL;
}
