/**
 * The HorizontalPodAutoscaler acting on pods of simulated VirtualNodes: a Deployment whose pods declare a CPU
 * usage that rises inside a time window and falls after it (a sim behaviour expression of the clock, so every
 * replica, old or new, rises and falls together). The controller-manager's HPA controller reads the usage
 * through metrics-server, which scrapes our node API's /metrics/resource; it must scale up while the usage
 * is high and back down after it falls, within its own sync and stabilisation windows (HPA_CONTROLLER_ARGS).
 */
import { expect } from 'chai';
import { SimBehaviourAnnotation } from '../../src/runtime/sim/profile.js';
import { eventually } from '../support/eventually.js';
import { NS, type ClusterEnv } from './env.js';

interface Scale {
  spec?: { replicas?: number };
  status?: { replicas?: number };
}

interface HPA {
  status?: { currentReplicas?: number; desiredReplicas?: number; currentMetrics?: unknown[] };
}

const NAME = 'hpa-web';
/** Usage while high: twice the 100m request, so the 50 % target wants four times the replicas. */
const HIGH_CORES = 0.2;
const LOW_CORES = 0.01;

export function hpaScenarios(getEnv: () => ClusterEnv): void {
  describe('HorizontalPodAutoscaler on declared sim usage', () => {
    it("scales a Deployment up while its pods' CPU is high and back down after it falls", async function () {
      this.timeout(6 * 60_000);
      const env = getEnv();
      // High from 30 s from now for 75 s: time to start, be scraped twice, and for the HPA to act.
      const highFrom = Math.ceil(Date.now() / 1000) + 30;
      const highUntil = highFrom + 75;
      const expr = `${LOW_CORES} + ${HIGH_CORES - LOW_CORES} * step(clock - ${highFrom}) * step(${highUntil} - clock)`;
      await env.apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: NAME, namespace: NS },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: NAME } },
          template: {
            metadata: {
              labels: { app: NAME },
              annotations: {
                [SimBehaviourAnnotation]: JSON.stringify({ usage: { cpu: { expr }, memory: '32Mi' } }),
              },
            },
            spec: {
              terminationGracePeriodSeconds: 0,
              nodeSelector: { 'cluster-test/pool': 'main' },
              containers: [
                {
                  name: 'web',
                  image: 'busybox',
                  imagePullPolicy: 'IfNotPresent',
                  command: ['sleep', '3600'],
                  resources: { requests: { cpu: '100m', memory: '32Mi' } },
                },
              ],
            },
          },
        },
      });
      await env.apply({
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: NAME, namespace: NS },
        spec: {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: NAME },
          minReplicas: 1,
          maxReplicas: 4,
          metrics: [
            {
              type: 'Resource',
              resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } },
            },
          ],
        },
      });
      const replicas = async (): Promise<number> =>
        (await env.get<Scale>(`/apis/apps/v1/namespaces/${NS}/deployments/${NAME}/scale`)).spec?.replicas ??
        0;
      const t0 = Date.now();
      try {
        // Before the window: 10 % of the request, one replica (the HPA has metrics and keeps it).
        await eventually(
          async () => {
            const h = await env.get<HPA>(
              `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers/${NAME}`,
            );
            return (h.status?.currentMetrics?.length ?? 0) > 0;
          },
          Math.max(5_000, highFrom * 1000 - Date.now()),
          "the HPA reading the pods' CPU before the usage rises",
          1000,
        );
        expect(await replicas()).to.equal(1);
        const up = await eventually(
          async () => {
            const n = await replicas();
            return n > 1 ? n : undefined;
          },
          highUntil * 1000 - Date.now(),
          'a scale-up while the declared usage is high',
          1000,
        );
        const upAt = (Date.now() - highFrom * 1000) / 1000;
        await eventually(
          async () => ((await replicas()) === 1 ? true : undefined),
          highUntil * 1000 - Date.now() + 120_000,
          'the scale-down to one replica after the usage fell',
          1000,
        );
        const downAt = (Date.now() - highUntil * 1000) / 1000;
        console.log(
          `      HPA: ${up} replicas ${upAt.toFixed(0)} s after the rise, 1 replica ${downAt.toFixed(0)} s after the fall` +
            ` (${((Date.now() - t0) / 1000).toFixed(0)} s in all)`,
        );
        expect(downAt).to.be.greaterThan(0);
      } finally {
        await env.k(['delete', 'hpa', NAME, '--wait=false']);
        await env.k(['delete', 'deployment', NAME, '--wait=false']);
      }
    });
  });
}
