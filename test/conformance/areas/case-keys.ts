/** Keys the case file's schema allows where several areas read the same object. */

/** The fields of a pod condition a case may give (and compare on). */
export const CONDITION_KEYS = [
  'type',
  'status',
  'reason',
  'message',
  'lastTransitionTime',
  'lastProbeTime',
  'observedGeneration',
];

/** The pod status fields the phase and status generation cases give. */
export const POD_STATUS_KEYS = [
  'phase',
  'reason',
  'message',
  'conditions',
  'containerStatuses',
  'initContainerStatuses',
  'ephemeralContainerStatuses',
];

/** The keys of a case's pod that say where it comes from and what happens to it, before its containers. */
export const POD_ORIGIN_KEYS = [
  'fixture',
  'restartPolicy',
  'hostNetwork',
  'deletionRequested',
  'addEphemeral',
  'change',
];
