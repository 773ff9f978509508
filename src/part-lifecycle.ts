// How an engine process ends when the stack that started it is gone, and when a graceful stop does not finish.
// The stacks set STACK_PID; a Kubernetes pod or a compose service sets nothing, and none of this runs there.

/**
 * Calls `onGone` once the stack (STACK_PID) is no longer this process's parent: it died without stopping its parts
 * (SIGKILL, the out-of-memory killer). A part must not outlive it, holding its ports.
 */
export function stopWithStack(onGone: () => void, env: NodeJS.ProcessEnv = process.env): void {
  const stack = Number(env.STACK_PID);
  if (!Number.isInteger(stack) || stack <= 1) return;
  const timer = setInterval(() => {
    if (process.ppid === stack) return;
    clearInterval(timer);
    onGone();
  }, 500);
  timer.unref();
}

/** After the first SIGINT or SIGTERM, the process exits within `ms` whatever its graceful stop still waits for. */
export function exitWithin(ms: number, onExpired: () => void = () => undefined): void {
  const arm = () =>
    setTimeout(() => {
      onExpired();
      process.exit(1);
    }, ms).unref();
  process.once('SIGINT', arm);
  process.once('SIGTERM', arm);
}

/** A stack's part: stops (SIGTERM to itself) when the stack is gone, and exits within `ms` of being told to stop. */
export function asStackPart(ms: number, log: (message: string) => void): void {
  exitWithin(ms, () => log(`still stopping after ${ms} ms: exiting`));
  stopWithStack(() => {
    log('the stack that started this process is gone: stopping');
    process.kill(process.pid, 'SIGTERM');
  });
}
