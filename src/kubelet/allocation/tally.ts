/**
 * A running sum of what the node's admitted pods were allocated: their count, requests and host ports. The
 * kubelet sums the active pods afresh at every admission (canAdmitPod over GetActivePods), which costs a scan of
 * the node's pods per pod admitted; the tally keeps the sum as pods are allocated and forgotten instead.
 *
 * It counts every pod allocated and not yet removed, including pods that stopped being active (terminating,
 * or reported terminal) before their removal. It therefore never counts less than the active pods hold, and
 * admission against it can only be stricter than against the active pods: a pod it admits fits the active
 * pods too, and a pod it rejects is decided again against the active pods themselves.
 *
 * A spec whose requests cannot be read, or that asks for a negative or fractional amount (sums of fractions
 * drift), would break that bound: while such a pod is tallied, `peers` answers undefined and the caller scans
 * the active pods.
 */
import type { Pod } from '../../api/core.js';
import type { ResourceAmounts } from '../../api/resources.js';
import { admissionShare, type AdmissionPeers } from '../lifecycle/admission.js';

interface Share {
  requests: ResourceAmounts;
  hostPorts: readonly string[];
}

export class AdmittedTally {
  private readonly shares = new Map<string, Share | undefined>();
  private readonly used = new Map<string, number>();
  private readonly ports = new Map<string, number>();
  /** Tallied pods whose share could not be counted (unreadable, negative or fractional requests). */
  private unreadable = 0;

  /** Tallies (or re-tallies) a pod with the spec it is allocated. */
  set(uid: string, spec: Pod['spec']): void {
    this.delete(uid);
    let share: Share | undefined;
    try {
      share = admissionShare(spec);
      for (const v of share.requests.values()) if (!Number.isSafeInteger(v) || v < 0) share = undefined;
    } catch {
      share = undefined;
    }
    this.shares.set(uid, share);
    if (!share) {
      this.unreadable++;
      return;
    }
    for (const [k, v] of share.requests) this.used.set(k, (this.used.get(k) ?? 0) + v);
    for (const p of share.hostPorts) this.ports.set(p, (this.ports.get(p) ?? 0) + 1);
  }

  delete(uid: string): void {
    if (!this.shares.has(uid)) return;
    const share = this.shares.get(uid);
    this.shares.delete(uid);
    if (!share) {
      this.unreadable--;
      return;
    }
    for (const [k, v] of share.requests) {
      const left = (this.used.get(k) ?? 0) - v;
      // Whole millicores and bytes add and subtract exactly: a resource nobody asks for any more is back at zero.
      if (left <= 0) this.used.delete(k);
      else this.used.set(k, left);
    }
    for (const p of share.hostPorts) {
      const n = (this.ports.get(p) ?? 0) - 1;
      if (n <= 0) this.ports.delete(p);
      else this.ports.set(p, n);
    }
  }

  get size(): number {
    return this.shares.size;
  }

  /**
   * The tallied pods as admission peers, `except` left out; undefined while a tallied pod's share is unreadable
   * (then only a scan of the active pods gives the right answer, or the right error).
   */
  peers(except?: string): AdmissionPeers | undefined {
    if (this.unreadable > 0) return undefined;
    if (except !== undefined && this.shares.has(except)) return undefined;
    return { count: this.shares.size, used: this.used, hostPorts: [...this.ports.keys()] };
  }
}
