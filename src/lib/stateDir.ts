import { homedir } from 'node:os';
import path from 'node:path';

/**
 * Where the per-key stores live (one budget per key, machine-wide):
 * $DARKROOM_STATE_DIR, else $XDG_STATE_HOME/darkroom (an absolute path, as the XDG base
 * directory spec requires; a relative one is ignored), else ~/.local/state/darkroom.
 */
export function stateDirFrom(env: NodeJS.ProcessEnv): string {
  const own = env.DARKROOM_STATE_DIR?.trim();
  if (own) return path.resolve(own);
  const xdg = env.XDG_STATE_HOME?.trim();
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'darkroom');
  return path.join(env.HOME?.trim() || homedir(), '.local', 'state', 'darkroom');
}
