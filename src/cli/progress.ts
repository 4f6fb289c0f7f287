/**
 * A one-line progress bar on a terminal stream (stderr): redrawn at most ten times a second unless
 * forced, erased when done. Commands draw it only when that stream is a TTY.
 */
export interface ProgressBar {
  update(fraction: number, label: string, force?: boolean): void;
  end(): void;
}

export function progressBar(stream: NodeJS.WriteStream, width = 28): ProgressBar {
  let last = 0;
  let drawn = false;
  return {
    update(fraction, label, force = false) {
      const t = Date.now();
      if (!force && t - last < 100) return;
      last = t;
      const f = Math.max(0, Math.min(1, fraction));
      const filled = Math.round(f * width);
      stream.write(`\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(f * 100)}%  ${label}`);
      drawn = true;
    },
    end() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
