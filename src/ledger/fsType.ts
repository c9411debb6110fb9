import { readFileSync, realpathSync, statfsSync } from 'node:fs';
import path from 'node:path';

/**
 * The file system a SQLite file of darkroom's would live on, and whether it is a network
 * one. SQLite's WAL needs shared memory that only one host's kernel keeps coherent, and its
 * locks are unreliable over NFS and SMB (sqlite.org/wal.html, "WAL does not work over a
 * network filesystem"; sqlite.org/faq.html#q5): a ledger there can be corrupted, and the
 * ledger is the one file whose loss costs money. Found by statfs's magic number, and for
 * FUSE by the mount's type in /proc/self/mountinfo (sshfs is network, ntfs-3g is not).
 */
export interface FileSystemKind {
  /** A short name for the operator: nfs, smb, 9p, fuse.sshfs, ext4 … */
  readonly name: string;
  readonly network: boolean;
}

/** statfs f_type magic numbers (Linux, include/uapi/linux/magic.h and the file systems' own). */
const NETWORK_MAGIC: ReadonlyMap<number, string> = new Map([
  [0x6969, 'nfs'],
  [0x517b, 'smb'],
  [0xff534d42, 'cifs'],
  [0xfe534d42, 'smb2'],
  [0x01021997, '9p'],
  [0x00c36400, 'ceph'],
  [0x5346414f, 'afs'],
  [0x6b414653, 'afs'],
  [0x73757245, 'coda'],
  [0x564c, 'ncp'],
  [0x7461636f, 'ocfs2'],
  [0x01161970, 'gfs2'],
  [0x0bd00bd0, 'lustre'],
  [0x20030528, 'orangefs'],
  [0x786f4256, 'vboxsf'],
]);
const FUSE_MAGIC = 0x65735546;
/** Local ones named in messages; any other magic is "local" by number. */
const LOCAL_MAGIC: ReadonlyMap<number, string> = new Map([
  [0xef53, 'ext4'],
  [0x58465342, 'xfs'],
  [0x9123683e, 'btrfs'],
  [0x01021994, 'tmpfs'],
  [0x794c7630, 'overlay'],
  [0x2fc12fc1, 'zfs'],
  [0x6a656a63, 'virtiofs'],
]);
/** FUSE mounts that reach another machine (the mount type after `fuse.`). */
const NETWORK_FUSE = new Set([
  'sshfs',
  'rclone',
  's3fs',
  'gcsfuse',
  'goofys',
  'blobfuse',
  'blobfuse2',
  'juicefs',
  'glusterfs',
  'ceph-fuse',
  'smbnetfs',
  'curlftpfs',
  'afpfs',
  'mfs',
  'lizardfs',
  'seaweedfs',
  'davfs',
  'davfs2',
  'cvmfs',
  'vmhgfs-fuse',
  'onedriver',
  'google-drive-ocamlfuse',
]);

/**
 * What it takes to tell (tests give their own): statfs's type of an existing path, and the
 * type /proc/self/mountinfo gives the mount holding it (null when unknown).
 */
export interface FsProbe {
  statfsType(existingPath: string): number;
  mountType(existingPath: string): string | null;
}

const systemFsProbe: FsProbe = {
  statfsType: (p) => statfsSync(p).type,
  mountType: (p) => mountTypeOf(p),
};

/**
 * The file system `file` would be on: that of its nearest existing folder (a new ledger's
 * folders are made later). DARKROOM_TEST_FS_TYPE (tests only: no NAS is at hand) names it
 * instead, as a name (nfs, smb, ext4 …) or a magic number (0x6969).
 */
export function fileSystemOf(file: string, probe: FsProbe = systemFsProbe, env: NodeJS.ProcessEnv = process.env): FileSystemKind {
  const forced = env.DARKROOM_TEST_FS_TYPE?.trim();
  if (forced) return byTestName(forced);
  const at = existingAncestor(path.resolve(file));
  let magic: number;
  try {
    magic = probe.statfsType(at);
  } catch {
    return { name: 'unknown', network: false }; // cannot tell: the open that follows says what is wrong, if anything
  }
  return kindOf(magic >>> 0, () => probe.mountType(at));
}

function kindOf(magic: number, mountType: () => string | null): FileSystemKind {
  const net = NETWORK_MAGIC.get(magic);
  if (net) return { name: net, network: true };
  if (magic === FUSE_MAGIC) {
    const type = mountType();
    const sub = type?.startsWith('fuse.') ? type.slice(5) : null;
    return { name: type ?? 'fuse', network: sub !== null && NETWORK_FUSE.has(sub) };
  }
  return { name: LOCAL_MAGIC.get(magic) ?? `0x${magic.toString(16)}`, network: false };
}

function byTestName(name: string): FileSystemKind {
  if (/^0x[0-9a-f]+$/i.test(name)) return kindOf(Number.parseInt(name, 16) >>> 0, () => null);
  if (name.startsWith('fuse.')) return { name, network: NETWORK_FUSE.has(name.slice(5)) };
  const net = [...NETWORK_MAGIC.values()].includes(name);
  return { name, network: net };
}

function existingAncestor(p: string): string {
  for (let dir = p; ; dir = path.dirname(dir)) {
    try {
      statfsSync(dir);
      return dir;
    } catch {
      if (path.dirname(dir) === dir) return dir;
    }
  }
}

/**
 * The type of the mount holding `p` (its longest mount point that contains the real path),
 * from /proc/self/mountinfo: field 5 is the mount point, the first field after ` - ` the
 * type (proc(5)); spaces in paths are written \040.
 */
function mountTypeOf(p: string): string | null {
  let real: string;
  let text: string;
  try {
    real = realpathSync.native(p);
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  let best: { point: string; type: string } | null = null;
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const point = (left.split(' ')[4] ?? '').replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    const type = right.split(' ')[0] ?? '';
    const inside = point === '/' || real === point || real.startsWith(`${point}/`);
    if (inside && (!best || point.length >= best.point.length)) best = { point, type };
  }
  return best?.type ?? null;
}
