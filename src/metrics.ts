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

/** What plugin_manager_total_plugins reads of a node's plugin manager: its two states of world. */
export interface PluginManagerView {
  registered(): readonly { socketPath: string }[];
  toRegister(): readonly { socketPath: string }[];
}

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
  /** kubelet_image_garbage_collected_total by reason (age, space): an image the image GC removed. */
  imageGarbageCollected(reason: string): CounterSeries;
  /**
   * The pod-resources API's kubelet_pod_resources_endpoint_{requests,errors}_* by server_api_version: `total`
   * is requests_total, the others one endpoint's requests or errors.
   */
  podResourcesEndpoint(counter: PodResourcesEndpointCounter, serverApiVersion: string): CounterSeries;
  /** The pods API's kubelet_pod_requests_{total,list_total,get_total,watch_total} by server_api_version and status_code. */
  podRequests(counter: PodRequestsCounter, serverApiVersion: string, statusCode: string): CounterSeries;
  /** kubelet_pod_watch_events_dropped_total: a pods API watcher dropped, or an event it could not be sent. */
  readonly podWatchEventsDropped: CounterSeries;
  /** kubelet_graceful_shutdown_start_time_seconds: when the last graceful shutdown started (epoch seconds). */
  gracefulShutdownStartTime(epochSeconds: number): void;
  /** kubelet_graceful_shutdown_end_time_seconds: when it ended, 0 while one is under way. */
  gracefulShutdownEndTime(epochSeconds: number): void;
}

/** The pods API's request counters by the kubelet_pod_requests_ suffix. */
export const POD_REQUESTS_COUNTERS = {
  total:
    'Cumulative number of requests to the PodsAPI endpoint. Broken down by server api version and status code.',
  list_total:
    'Number of requests to the PodsAPI List endpoint. Broken down by server api version and status code.',
  get_total:
    'Number of requests to the PodsAPI Get endpoint. Broken down by server api version and status code.',
  watch_total:
    'Number of requests to the PodsAPI Watch endpoint. Broken down by server api version and status code.',
} as const;
export type PodRequestsCounter = keyof typeof POD_REQUESTS_COUNTERS;

/** The pod-resources API's counters, each named after its kubelet_pod_resources_endpoint_ suffix. */
export const POD_RESOURCES_ENDPOINT_COUNTERS = {
  requests_total:
    'Cumulative number of requests to the PodResource endpoint. Broken down by server api version.',
  requests_list: 'Number of requests to the PodResource List endpoint. Broken down by server api version.',
  requests_get_allocatable:
    'Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version.',
  requests_get: 'Number of requests to the PodResource Get endpoint. Broken down by server api version.',
  errors_list:
    'Number of requests to the PodResource List endpoint which returned error. Broken down by server api version.',
  errors_get_allocatable:
    'Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version.',
  errors_get:
    'Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version.',
} as const;
export type PodResourcesEndpointCounter = keyof typeof POD_RESOURCES_ENDPOINT_COUNTERS;

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
  readonly imageGarbageCollectedTotal: SeriesCounter<'node' | 'reason'>;
  readonly podResourcesEndpoint: Record<
    PodResourcesEndpointCounter,
    SeriesCounter<'node' | 'server_api_version'>
  >;
  readonly podRequests: Record<
    PodRequestsCounter,
    SeriesCounter<'node' | 'server_api_version' | 'status_code'>
  >;
  readonly podWatchEventsDroppedTotal: SeriesCounter<'node'>;
  readonly gracefulShutdownStartTime: Gauge<'node'>;
  readonly gracefulShutdownEndTime: Gauge<'node'>;
  readonly restClientRequests: SeriesCounter<'verb' | 'resource' | 'code'>;
  readonly restClientLatency: SeriesHistogram<'verb'>;
  readonly runningPods: Gauge<'node'>;
  readonly runningContainers: Gauge<'node'>;
  readonly virtualNodes: Gauge<'state'>;
  readonly eventLoopDelay: Histogram;
  /** Each served node's Event recorder, read when the metrics are scraped (ManagedNode adds and removes). */
  readonly eventRecorders = new Map<string, EventRecorderView>();
  /** Each node's plugin manager, read at scrape time (plugin_manager_total_plugins). */
  readonly pluginManagers = new Map<string, PluginManagerView>();

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
    this.imageGarbageCollectedTotal = new SeriesCounter({
      name: 'kubelet_image_garbage_collected_total',
      help: 'Total number of images garbage collected by the kubelet, whether through disk usage or image age.',
      labelNames: ['node', 'reason'],
      registers,
    });
    this.podResourcesEndpoint = Object.fromEntries(
      Object.entries(POD_RESOURCES_ENDPOINT_COUNTERS).map(([suffix, help]) => [
        suffix,
        new SeriesCounter({
          name: `kubelet_pod_resources_endpoint_${suffix}`,
          help,
          labelNames: ['node', 'server_api_version'],
          registers,
        }),
      ]),
    ) as Record<PodResourcesEndpointCounter, SeriesCounter<'node' | 'server_api_version'>>;
    this.podRequests = Object.fromEntries(
      Object.entries(POD_REQUESTS_COUNTERS).map(([suffix, help]) => [
        suffix,
        new SeriesCounter({
          name: `kubelet_pod_requests_${suffix}`,
          help,
          labelNames: ['node', 'server_api_version', 'status_code'],
          registers,
        }),
      ]),
    ) as Record<PodRequestsCounter, SeriesCounter<'node' | 'server_api_version' | 'status_code'>>;
    this.podWatchEventsDroppedTotal = new SeriesCounter({
      name: 'kubelet_pod_watch_events_dropped_total',
      help: 'Cumulative number of pod watch events dropped.',
      labelNames: ['node'],
      registers,
    });
    this.gracefulShutdownStartTime = new Gauge({
      name: 'kubelet_graceful_shutdown_start_time_seconds',
      help: 'Last graceful shutdown start time since unix epoch in seconds',
      labelNames: ['node'],
      registers,
    });
    this.gracefulShutdownEndTime = new Gauge({
      name: 'kubelet_graceful_shutdown_end_time_seconds',
      help: 'Last graceful shutdown end time since unix epoch in seconds',
      labelNames: ['node'],
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
    const pluginManagers = this.pluginManagers;
    new Gauge({
      // The kubelet's name has no kubelet_ prefix: its plugin manager's collector names it in full.
      name: 'plugin_manager_total_plugins',
      help: 'Number of plugins in Plugin Manager',
      labelNames: ['node', 'socket_path', 'state'],
      registers,
      collect() {
        this.reset();
        for (const [node, m] of pluginManagers) {
          for (const [state, plugins] of [
            ['actual_state_of_world', m.registered()],
            ['desired_state_of_world', m.toRegister()],
          ] as const) {
            for (const p of plugins) this.inc({ node, socket_path: p.socketPath, state });
          }
        }
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
      imageGarbageCollected: (reason) => this.imageGarbageCollectedTotal.series({ node, reason }),
      podResourcesEndpoint: (counter, server_api_version) =>
        this.podResourcesEndpoint[counter].series({ node, server_api_version }),
      podRequests: (counter, server_api_version, status_code) =>
        this.podRequests[counter].series({ node, server_api_version, status_code }),
      podWatchEventsDropped: this.podWatchEventsDroppedTotal.series({ node }),
      gracefulShutdownStartTime: (seconds) => this.gracefulShutdownStartTime.set({ node }, seconds),
      gracefulShutdownEndTime: (seconds) => this.gracefulShutdownEndTime.set({ node }, seconds),
    };
  }

  /** Hook for KubeClient's onRequest. */
  readonly onRequest = (verb: string, resource: string, code: number, durationMs: number): void => {
    this.restClientRequests.inc({ verb, resource, code: String(code) });
    this.restClientLatency.observe({ verb }, durationMs / 1000);
  };
}
