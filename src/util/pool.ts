/**
 * Runs `work` over `items` with at most `limit` calls in flight, each next item taken as soon as a call ends;
 * resolves once every call has. A call that rejects rejects the whole (the callers here catch inside `work`).
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
