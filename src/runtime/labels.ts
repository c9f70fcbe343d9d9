/**
 * The labels and annotations the kubelet puts on sandboxes and containers. After a restart, every piece of
 * pod state that matters is read back from these, never from memory.
 */
export const PodNameLabel = 'io.kubernetes.pod.name';
export const PodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const PodUIDLabel = 'io.kubernetes.pod.uid';
export const ContainerNameLabel = 'io.kubernetes.container.name';
/** Marks every object we create, so cleanup never touches another agent's containers. */
export const ManagedByLabel = 'kubelet-operator.dev/node';

export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const ContainerTerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const ContainerTerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const PodDeletionGracePeriodAnnotation = 'io.kubernetes.pod.deletionGracePeriod';
export const PodTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';
export const ContainerPortsAnnotation = 'io.kubernetes.container.ports';
/** Where a container's preStop handler is recorded, so a kill without the pod object can still run it. */
export const PreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';

/** The kubelet's name for the pod-infrastructure container in sandbox labels. */
export const KubernetesContainerTypeLabel = 'io.cri-containerd.kind';
