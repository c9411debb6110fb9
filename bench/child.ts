/** A darkroom CLI run by a benchmark: an environment of its own, with the key and the keys' state folder only. */
export function darkroomEnv(key: string, stateDir: string, more: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    ...more,
    DARKROOM_API_KEY: key,
    DARKROOM_STATE_DIR: stateDir,
  };
}
