/** React hooks over the API client (api.ts). */
import { useCallback, useEffect, useState } from 'react';
import { ApiError, asApiError, getJson, isAbort } from './api';

export interface ApiResource<T> {
  /** The last answer; null until the first one arrives. */
  readonly data: T | null;
  /** The last refusal, cleared by the next answer. */
  readonly error: ApiError | null;
  /** GET it again (the previous answer stays shown meanwhile). */
  readonly reload: () => void;
}

/** GET `path` as JSON when the component mounts, when `path` changes and on `reload()`; aborted on unmount. */
export function useApiJson<T>(path: string): ApiResource<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);

  useEffect(() => {
    const ctrl = new AbortController();
    getJson<T>(path, ctrl.signal).then(
      (r) => {
        setData(r);
        setError(null);
      },
      (e: unknown) => {
        if (!isAbort(e)) setError(asApiError(e));
      },
    );
    return () => ctrl.abort();
  }, [path, generation]);

  return { data, error, reload };
}
