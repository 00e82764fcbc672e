// Prometheus metrics (prom-client). prom-client's default Node collectors report NaN event-loop
// figures under Bun, and the docs say non-finite samples are omitted, so the process gauges are ours.
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;

  constructor(version: string) {
    const registers = [this.registry];
    new Gauge({ name: "lemonade_server_up", help: "Whether the Lemonade server is running.", registers }).set(1);
    new Gauge({
      name: "lemonade_server_info",
      help: "Lemonade server build information.",
      labelNames: ["version"],
      registers,
    }).set({ version }, 1);
    new Gauge({
      name: "lemonade_process_start_time_seconds",
      help: "Start time of the server process since the Unix epoch, in seconds.",
      registers,
    }).set(Math.round(Date.now() / 1000 - process.uptime()));
    new Gauge({
      name: "lemonade_process_resident_memory_bytes",
      help: "Resident memory of the server process, in bytes.",
      registers,
      collect() {
        this.set(process.memoryUsage().rss);
      },
    });
    new Gauge({
      name: "lemonade_process_cpu_seconds_total",
      help: "User and system CPU time spent by the server process, in seconds.",
      registers,
      collect() {
        const { user, system } = process.cpuUsage();
        this.set((user + system) / 1e6);
      },
    });
    this.httpRequests = new Counter({
      name: "lemonade_http_requests_total",
      help: "HTTP requests answered, by method, route pattern and status.",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.httpDuration = new Histogram({
      name: "lemonade_http_request_duration_seconds",
      help: "Time from request to response headers, by method and route pattern.",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
