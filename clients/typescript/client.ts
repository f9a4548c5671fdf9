// A client of planner's API written against the types that openapi-typescript
// generates from openapi.yaml with its defaults (planner.d.ts), calling the
// service with openapi-fetch: a plan, a what-if grid and a simulation of one
// scenario. It prints what the service answered as one JSON document.
//
// The scenario gives only what a team must say; every field the service
// defaults (a quota's token_accounting, headroom, burst_window_s and
// active_hours, a class's weight, the policy's allocation, draws, max_pool
// and max_utilization, knee safety by mode) is left out, so that this file
// compiles only if the document lets a client leave them out.
import createClient from "openapi-fetch";
import type { components, paths } from "./planner.js";

declare const process: { argv: string[] };

type Scenario = components["schemas"]["Scenario"];

const scenario: Scenario = {
  quotas: [{ name: "prod", rpm: 3000, tpm: 1000000 }],
  latency: { ttft_ms: { p50: 350, p95: 800 }, tpot_ms: { p50: 18, p95: 30 } },
  classes: [
    {
      name: "chat",
      quota: "prod",
      mode: "interactive",
      demand: { rps: 2 },
      input_tokens: { p50: 600, p95: 2000 },
      output_tokens: { p50: 150, p95: 450 },
      max_tokens: 700,
      slo: { ttft_p95_ms: 1500, e2e_p95_ms: 12000 },
    },
  ],
  policy: { seed: 7, knee_safety: { interactive: 0.7 } },
};

const client = createClient<paths>({ baseUrl: process.argv[2] });

async function main(): Promise<void> {
  const plan = await client.POST("/v1/plans", { body: { scenario } });
  if (plan.error !== undefined) {
    throw new Error(`plan: ${plan.response.status} ${plan.error.detail ?? ""}`);
  }
  const whatIf = await client.POST("/v1/what-if", {
    body: { scenario, variations: [{ path: "/quotas/0/tpm", values: [100000, 1000000] }] },
  });
  if (whatIf.error !== undefined) {
    throw new Error(`what-if: ${whatIf.response.status} ${whatIf.error.detail ?? ""}`);
  }
  const simulation = await client.POST("/v1/simulations", {
    body: { scenario, duration_s: 120, seed: 3 },
  });
  if (simulation.error !== undefined) {
    throw new Error(`simulation: ${simulation.response.status} ${simulation.error.detail ?? ""}`);
  }
  const chat = plan.data.classes?.[0];
  const run = simulation.data.classes?.[0];
  console.log(
    JSON.stringify({
      plan: { pool: chat?.pool, binding_constraint: chat?.binding_constraint },
      what_if: (whatIf.data.cells ?? []).map((cell) => ({ values: cell.values, pool: cell.classes?.[0]?.pool })),
      simulation: { pool: run?.pool, completed: run?.simulated.completed, holds: simulation.data.verdict.holds },
    }),
  );
}

await main();
