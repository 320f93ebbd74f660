/**
 * `load`, run once and shared by every caller, until it fails: a failure is handed to the callers that
 * waited for it and forgotten, so the next call tries again instead of failing for good.
 */
export function onceUntilFailure<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    if (!pending) {
      const loading = load();
      pending = loading;
      loading.catch(() => {
        if (pending === loading) pending = undefined;
      });
    }
    return pending;
  };
}
