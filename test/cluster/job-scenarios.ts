/**
 * Jobs on the simulated VirtualNodes (test/cluster/env.ts), through kubectl and the API only: the job
 * controller reacts to the exit codes, restarts and pod phases our kubelet reports, and the failed and
 * succeeded pods carry the conditions a kubelet gives terminal pods.
 */
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { NS, type ClusterEnv } from './env.js';
import {
  expectKubeletEvent,
  expectPodConditions,
  kubeletMessage,
  terminalConditions,
} from './kubelet-expectations.js';

interface Job {
  status?: {
    succeeded?: number;
    failed?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export function jobScenarios(getEnv: () => ClusterEnv): void {
  describe('Jobs', () => {
    const apply = (obj: unknown): Promise<string> => getEnv().apply(obj);
    const pods = (selector: string) => getEnv().pods(selector);
    const events = (name: string) => getEnv().events(name);
    const job = (name: string): Promise<Job> =>
      getEnv().get<Job>(`/apis/batch/v1/namespaces/${NS}/jobs/${name}`);

    it('a Job whose first pod fails retries (restartPolicy Never, a new pod) and completes', async () => {
      // The failed attempt count reaches the pod through the job controller's annotation; `exit 0024` is
      // 24 (fail) on the first attempt and `exit 1024` = 0 (success, exit codes are mod 256) on the second.
      const t0 = Date.now();
      await apply({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'retry', namespace: NS },
        spec: {
          completionMode: 'Indexed',
          completions: 1,
          backoffLimitPerIndex: 2,
          template: {
            metadata: { labels: { job: 'retry' } },
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'work',
                  image: 'busybox:1.36',
                  command: ['sh', '-c', 'exit ${FAILURES}024'],
                  env: [
                    {
                      name: 'FAILURES',
                      valueFrom: {
                        fieldRef: {
                          fieldPath: "metadata.annotations['batch.kubernetes.io/job-index-failure-count']",
                        },
                      },
                    },
                  ],
                },
              ],
            },
          },
        },
      });
      await eventually(
        async () =>
          (await job('retry')).status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
        90_000,
        'Job retry Complete',
        500,
      );
      const ps = await pods('job=retry');
      expect(ps.map((p) => p.status?.phase).sort()).to.deep.equal(['Failed', 'Succeeded']);
      const failed = ps.find((p) => p.status?.phase === 'Failed')!;
      expect(failed.status?.containerStatuses?.[0]?.state?.terminated).to.include({
        exitCode: 24,
        reason: 'Error',
      });
      const ok = ps.find((p) => p.status?.phase === 'Succeeded')!;
      expect(ok.status?.containerStatuses?.[0]?.state?.terminated).to.include({
        exitCode: 0,
        reason: 'Completed',
      });
      expect(ok.status?.containerStatuses?.[0]).to.include({ ready: false, started: false, restartCount: 0 });
      expectPodConditions(ok, terminalConditions('Succeeded'));
      expectPodConditions(failed, terminalConditions('Failed'));
      expect((await job('retry')).status).to.include({ succeeded: 1, failed: 1 });
      console.log(`      retried Job complete in ${Date.now() - t0} ms`);
    });

    it('a Job with restartPolicy OnFailure restarts its container in place, counts it, then fails', async () => {
      const t0 = Date.now();
      await apply({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'onfailure', namespace: NS },
        spec: {
          // The job controller fails an OnFailure Job once the restart count reaches backoffLimit. With 1, it
          // deletes the pod right after the first restart, racing the sync that sees the second exit and
          // records BackOff (a kubelet races the same way). With 2, the second exit falls inside the 10 s
          // crash-loop back-off while the pod still runs, so BackOff comes first and the Job fails after.
          backoffLimit: 2,
          template: {
            metadata: { labels: { job: 'onfailure' } },
            spec: {
              restartPolicy: 'OnFailure',
              containers: [{ name: 'work', image: 'busybox:1.36', command: ['sh', '-c', 'exit 3'] }],
            },
          },
        },
      });
      const pod = await eventually(
        async () =>
          (await pods('job=onfailure')).find(
            (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
          ),
        60_000,
        'a restarted container',
        500,
      );
      expect(pod.status?.containerStatuses?.[0]?.lastState?.terminated).to.include({
        exitCode: 3,
        reason: 'Error',
      });
      const backoff = await eventually(
        async () => (await events(pod.metadata.name!)).find((e) => e.reason === 'BackOff'),
        30_000,
        'a BackOff event',
      );
      expectKubeletEvent([backoff], {
        reason: 'BackOff',
        type: 'Warning',
        message: kubeletMessage.backOff('work', pod),
        node: pod.spec!.nodeName!,
        container: 'work',
      });
      await eventually(
        async () =>
          (await job('onfailure')).status?.conditions?.find(
            (c) => c.type === 'Failed' && c.status === 'True',
          ),
        60_000,
        'Job onfailure Failed',
        500,
      );
      console.log(`      OnFailure Job failed after in-place restarts in ${Date.now() - t0} ms`);
    });

    it('a Job with restartPolicy Never that fails is Failed, its pod phase Failed', async () => {
      const t0 = Date.now();
      await apply({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'never', namespace: NS },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { job: 'never' } },
            spec: {
              restartPolicy: 'Never',
              containers: [
                { name: 'work', image: 'busybox:1.36', command: ['sh', '-c', 'echo boom >&2; exit 7'] },
              ],
            },
          },
        },
      });
      const cond = await eventually(
        async () =>
          (await job('never')).status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True'),
        60_000,
        'Job never Failed',
        500,
      );
      expect(cond.reason).to.equal('BackoffLimitExceeded');
      const ps = await pods('job=never');
      expect(ps).to.have.length(1);
      expect(ps[0]!.status?.phase).to.equal('Failed');
      expectPodConditions(ps[0]!, terminalConditions('Failed'));
      expect(ps[0]!.status?.containerStatuses?.[0]?.state?.terminated).to.include({
        exitCode: 7,
        reason: 'Error',
      });
      console.log(`      failing Job Failed in ${Date.now() - t0} ms`);
    });
  });
}
