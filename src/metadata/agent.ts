import { readFileSync } from 'node:fs';

/**
 * darkroom's name and version as outputs state them (`stEvt:softwareAgent` of each History
 * event): "darkroom 0.1.0". package.json sits two folders above this file in src/ and dist/ alike.
 */
const DARKROOM_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
export const DARKROOM_AGENT = `darkroom ${DARKROOM_VERSION}`;
