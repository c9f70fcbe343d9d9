/**
 * Prometheus metrics with the kubelet's names where a kubelet metric exists, so existing dashboards and
 * alerts read them: pod start duration, pod worker duration, PLEG relist duration, prober results, pods and
 * containers started (and failing to), containers terminated, and REST client requests by verb and code. One registry per operator process; every series carries the node.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EventRecorder } from './kube/events.js';
import { EventLoopDelaySampler } from './util/loopdelay.js';
import {
  SeriesCounter,
  SeriesHistogram,
  type CounterSeries,
  type HistogramSeries,
} from './util/promseries.js';
import { KUBERNETES_NATIVE_HISTOGRAMS } from './util/prometheus/nativehistogram.js';

/** What the metrics read of an Event recorder: its outcome counts and what waits. */
export type EventRecorderView = Pick<EventRecorder, 'stats' | 'pending'>;

/** One node's series of the per-node metrics: the node's label given once (see Metrics.forNode). */
export interface NodeMetricSeries {
  readonly podStart: HistogramSeries;
  readonly relist: HistogramSeries;
  worker(operation: string): HistogramSeries;
  probe(probeType: string, result: string): CounterSeries;
  /** kubelet_started_pods_total: a sandbox the kubelet set out to create. */
  readonly startedPods: CounterSeries;
  /** kubelet_started_pods_errors_total: a sandbox that failed to be created (not for a pod being deleted). */
  readonly startedPodsErrors: CounterSeries;
  /** kubelet_started_containers_total by container_type (container, init_container, ephemeral_container). */
  startedContainers(containerType: string): CounterSeries;
  /** kubelet_started_containers_errors_total by container_type and code (the start error's reason). */
  startedContainersErrors(containerType: string, code: string): CounterSeries;
  /** kubelet_terminated_containers_total by container_type, exit_code and reason: a newly terminated state. */
  terminatedContainers(containerType: string, exitCode: string, reason: string): CounterSeries;
  /** kubelet_evictions by eviction_signal: a pod the eviction manager evicted. */
  evictions(signal: string): CounterSeries;
  /** kubelet_eviction_stats_age_seconds by eviction_signal: how old the stats an eviction acted on were. */
  evictionStatsAge(signal: string): HistogramSeries;
}

export class Metrics {
  readonly registry = new Registry();
  // Counted per pod, probe, relist or request: series kept by their callers (src/util/promseries.ts).
  readonly podStartDuration: SeriesHistogram<'node'>;
  readonly podWorkerDuration: SeriesHistogram<'node' | 'operation'>;
  readonly plegRelistDuration: SeriesHistogram<'node'>;
  readonly proberProbeTotal: SeriesCounter<'node' | 'probe_type' | 'result'>;
  readonly startedPodsTotal: SeriesCounter<'node'>;
  readonly startedPodsErrorsTotal: SeriesCounter<'node'>;
  readonly startedContainersTotal: SeriesCounter<'node' | 'container_type'>;
  readonly startedContainersErrorsTotal: SeriesCounter<'node' | 'container_type' | 'code'>;
  readonly terminatedContainersTotal: SeriesCounter<'node' | 'container_type' | 'exit_code' | 'reason'>;
  readonly evictionsTotal: SeriesCounter<'node' | 'eviction_signal'>;
  readonly evictionStatsAge: SeriesHistogram<'node' | 'eviction_signal'>;
  readonly restClientRequests: SeriesCounter<'verb' | 'resource' | 'code'>;
  readonly restClientLatency: SeriesHistogram<'verb'>;
  readonly runningPods: Gauge<'node'>;
  readonly runningContainers: Gauge<'node'>;
  readonly virtualNodes: Gauge<'state'>;
  readonly eventLoopDelay: Histogram;
  /** Each served node's Event recorder, read when the metrics are scraped (ManagedNode adds and removes). */
  readonly eventRecorders = new Map<string, EventRecorderView>();

  /**
   * `nativeHistograms`: the NativeHistograms gate (v1.37: Beta, on by default). On, the kubelet's histograms
   * keep native buckets as component-base's do (KUBERNETES_NATIVE_HISTOGRAMS), sent in the protobuf exposition.
   */
  constructor(defaultMetrics = true, nativeHistograms = true) {
    const registers = [this.registry];
    const native = nativeHistograms ? KUBERNETES_NATIVE_HISTOGRAMS : undefined;
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
    this.eventLoopDelay = new Histogram({
      name: 'kubelet_operator_event_loop_delay_seconds',
      help: 'How late a 10 ms timer fires: event-loop delay, cumulative (unlike nodejs_eventloop_lag_*, which every scrape resets).',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    // Process-wide, like the default metrics; its timer is unref'd and never holds the process.
    if (defaultMetrics) new EventLoopDelaySampler(this.eventLoopDelay).start();
    const secs = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
    this.podStartDuration = new SeriesHistogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration from a pod being seen by the node agent to all its containers running.',
      labelNames: ['node'],
      buckets: secs,
      native,
      registers,
    });
    this.podWorkerDuration = new SeriesHistogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration of one pod worker sync, by operation.',
      labelNames: ['node', 'operation'],
      buckets: secs,
      native,
      registers,
    });
    this.plegRelistDuration = new SeriesHistogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration of one PLEG relist.',
      labelNames: ['node'],
      buckets: secs,
      native,
      registers,
    });
    this.proberProbeTotal = new SeriesCounter({
      name: 'prober_probe_total',
      help: 'Probe results by probe type and result.',
      labelNames: ['node', 'probe_type', 'result'],
      registers,
    });
    // The kubelet's start and termination counters (pkg/kubelet/metrics), with its help texts.
    this.startedPodsTotal = new SeriesCounter({
      name: 'kubelet_started_pods_total',
      help: 'Cumulative number of pods started',
      labelNames: ['node'],
      registers,
    });
    this.startedPodsErrorsTotal = new SeriesCounter({
      name: 'kubelet_started_pods_errors_total',
      help: 'Cumulative number of errors when starting pods',
      labelNames: ['node'],
      registers,
    });
    this.startedContainersTotal = new SeriesCounter({
      name: 'kubelet_started_containers_total',
      help: 'Cumulative number of containers started',
      labelNames: ['node', 'container_type'],
      registers,
    });
    this.startedContainersErrorsTotal = new SeriesCounter({
      name: 'kubelet_started_containers_errors_total',
      help: 'Cumulative number of errors when starting containers',
      labelNames: ['node', 'container_type', 'code'],
      registers,
    });
    this.terminatedContainersTotal = new SeriesCounter({
      name: 'kubelet_terminated_containers_total',
      help: 'Cumulative number of container terminations.',
      labelNames: ['node', 'container_type', 'exit_code', 'reason'],
      registers,
    });
    this.evictionsTotal = new SeriesCounter({
      name: 'kubelet_evictions',
      help: 'Cumulative number of pod evictions by eviction signal',
      labelNames: ['node', 'eviction_signal'],
      registers,
    });
    this.evictionStatsAge = new SeriesHistogram({
      name: 'kubelet_eviction_stats_age_seconds',
      help: 'Time between when stats are collected, and when pod is evicted based on those stats by eviction signal',
      labelNames: ['node', 'eviction_signal'],
      // The kubelet's: Prometheus' default buckets.
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      native,
      registers,
    });
    this.restClientRequests = new SeriesCounter({
      name: 'rest_client_requests_total',
      help: 'API server requests by verb, resource and HTTP code (0 = no response).',
      labelNames: ['verb', 'resource', 'code'],
      registers,
    });
    this.restClientLatency = new SeriesHistogram({
      name: 'rest_client_request_duration_seconds',
      help: 'API server request latency by verb.',
      labelNames: ['verb'],
      buckets: secs,
      native,
      registers,
    });
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: 'Pods with a running sandbox.',
      labelNames: ['node'],
      registers,
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: 'Running containers.',
      labelNames: ['node'],
      registers,
    });
    const recorders = this.eventRecorders;
    new Counter({
      name: 'kubelet_operator_events_total',
      help: 'Event writes by outcome: created, patched, merged (into a waiting write of the same Event), filtered (spam filter), dropped_queue_full (displaced included: a waiting write that gave way to one of higher priority), failed, retried (a try that got no answer from the API server, made again after a sleep).',
      labelNames: ['node', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const [node, r] of recorders) {
          const s = r.stats;
          this.inc({ node, outcome: 'created' }, s.created);
          this.inc({ node, outcome: 'patched' }, s.patched);
          this.inc({ node, outcome: 'merged' }, s.merged);
          this.inc({ node, outcome: 'filtered' }, s.filtered);
          this.inc({ node, outcome: 'dropped_queue_full' }, s.dropped - s.filtered);
          this.inc({ node, outcome: 'failed' }, s.failed);
          this.inc({ node, outcome: 'retried' }, s.retried);
        }
      },
    });
    new Gauge({
      name: 'kubelet_operator_events_pending',
      help: 'Events waiting in a node recorder queue to be written.',
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        for (const [node, r] of recorders) this.set({ node }, r.pending);
      },
    });
    this.virtualNodes = new Gauge({
      name: 'kubelet_operator_virtual_nodes',
      help: 'VirtualNodes served by this process, by state.',
      labelNames: ['state'],
      registers,
    });
  }

  /** The node's series, for the kubelet of that node to keep. */
  forNode(node: string): NodeMetricSeries {
    return {
      podStart: this.podStartDuration.series({ node }),
      relist: this.plegRelistDuration.series({ node }),
      worker: (operation) => this.podWorkerDuration.series({ node, operation }),
      probe: (probe_type, result) => this.proberProbeTotal.series({ node, probe_type, result }),
      startedPods: this.startedPodsTotal.series({ node }),
      startedPodsErrors: this.startedPodsErrorsTotal.series({ node }),
      startedContainers: (container_type) => this.startedContainersTotal.series({ node, container_type }),
      startedContainersErrors: (container_type, code) =>
        this.startedContainersErrorsTotal.series({ node, container_type, code }),
      terminatedContainers: (container_type, exit_code, reason) =>
        this.terminatedContainersTotal.series({ node, container_type, exit_code, reason }),
      evictions: (eviction_signal) => this.evictionsTotal.series({ node, eviction_signal }),
      evictionStatsAge: (eviction_signal) => this.evictionStatsAge.series({ node, eviction_signal }),
    };
  }

  /** Hook for KubeClient's onRequest. */
  readonly onRequest = (verb: string, resource: string, code: number, durationMs: number): void => {
    this.restClientRequests.inc({ verb, resource, code: String(code) });
    this.restClientLatency.observe({ verb }, durationMs / 1000);
  };
}
