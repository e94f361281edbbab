/*
 * Commands that destroy what a machine holds: recursive deletes (through `rm`, `find -delete`,
 * `find -exec rm`, `xargs rm`), writes to block devices, new filesystems on devices, disk
 * wipers on Linux, macOS and the BSDs.
 */
import type { CommandSite } from './command-sites.js';
import { someView, writesTo } from './site-views.js';
import { isBlockDevice, operands, rmArguments } from './targets.js';

type TargetTest = (path: string) => boolean;

/** `rm -r`, `find … -delete` / `-exec rm`, or `xargs rm -r` fed a list: removes a target `test` accepts. */
export function removesRecursively(site: CommandSite, test: TargetTest): boolean {
  return someView(site, (program, args) => {
    if (program === 'rm') {
      const { recursive, targets } = rmArguments(args);
      return recursive && targets.some(test);
    }
    if (program === 'find') return findDeletes(args) && findStartingPoints(args).some(test);
    if (program === 'xargs') return xargsRemovesRecursively(args) && xargsInputs(site).some(test);
    return false;
  });
}

/** `find`'s starting points: the operands before the expression (`find / -name x` → `/`). */
export function findStartingPoints(args: readonly string[]): string[] {
  const points: string[] = [];
  for (const arg of args) {
    if (/^-(?:[HLP]|D|O\d*)$/.test(arg) && points.length === 0) continue;
    if (arg.startsWith('-') || arg === '(' || arg === '!' || arg === ')') break;
    points.push(arg);
  }
  return points.length === 0 ? ['.'] : points;
}

const DELETING_PROGRAMS = new Set(['rm', 'shred', 'unlink', 'rmdir', 'srm', 'wipe']);

function findDeletes(args: readonly string[]): boolean {
  return args.some(
    (arg, i) =>
      arg === '-delete' ||
      (/^-(?:exec|execdir|ok|okdir)$/.test(arg) && DELETING_PROGRAMS.has((args[i + 1] ?? '').replace(/^.*\//, ''))),
  );
}

function xargsRemovesRecursively(args: readonly string[]): boolean {
  const at = args.findIndex((arg) => arg.replace(/^.*\//, '') === 'rm');
  return at >= 0 && rmArguments(args.slice(at + 1)).recursive;
}

/** What feeds `xargs`: the operands of an `echo`/`printf`, the starting points of a `find`. */
function xargsInputs(site: CommandSite): string[] {
  return site.upstream().flatMap((fed) =>
    fed.views.flatMap((view) => {
      if (view.program === 'echo' || view.program === 'printf')
        return operands(view.args).flatMap((arg) => arg.split(/\s+/));
      if (view.program === 'find') return findStartingPoints(view.args);
      if (view.program === 'ls') return operands(view.args);
      return [];
    }),
  );
}

export function writesBlockDevice(site: CommandSite): boolean {
  return writesTo(site, isBlockDevice);
}

const MKFS = /^(?:mkfs(?:\..+)?|mke2fs|mkdosfs|mkntfs|mkexfatfs|mkswap|newfs(?:_.+)?)$/;
/** mkfs options whose value is a name or a number, never the device: `-L /dev/sda image` labels an image. */
const MKFS_VALUE_OPTIONS = new Set([
  '-L',
  '-U',
  '-d',
  '-E',
  '-O',
  '-o',
  '-T',
  '-t',
  '-M',
  '-C',
  '-I',
  '-b',
  '-G',
  '-g',
  '-i',
  '-m',
  '-N',
  '-r',
  '-z',
  '-e',
  '--label',
  '--uuid',
  '--type',
]);
/** mke2fs `-n` only shows what it would do; `-V` prints the version. */
const MKFS_DRY_RUN = /^-[A-Za-z]*[nV][A-Za-z]*$/;

/** A new filesystem on a device; on an image file it is an ordinary command. */
export function makesFilesystemOnDevice(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (!MKFS.test(program)) return false;
    const given = args.filter((_arg, i) => !MKFS_VALUE_OPTIONS.has(args[i - 1] ?? ''));
    if ((program.startsWith('mkfs.ext') || program === 'mke2fs') && given.some((arg) => MKFS_DRY_RUN.test(arg)))
      return false;
    return given.some((arg) => isBlockDevice(arg.replace(/^device=/, '')));
  });
}

/** `diskutil` verbs that erase, and Linux tools that wipe or re-partition a device. */
const DISKUTIL_ERASE =
  /^(?:eraseDisk|eraseVolume|zeroDisk|randomDisk|secureErase|partitionDisk|reformat|eraseCD|eraseOptical|splitPartition|mergePartitions|resizeVolume)$/i;
const APFS_ERASE = /^(?:deleteContainer|eraseVolume|deleteVolume|deleteVolumeGroup)$/i;

export function wipesDevice(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    const devices = operands(args).some(isBlockDevice) || args.some((arg) => isBlockDevice(arg.replace(/^[^=]*=/, '')));
    switch (program) {
      case 'wipefs':
      case 'blkdiscard':
        return true;
      case 'shred':
        return devices;
      case 'badblocks':
        return devices && args.some((arg) => /^-[a-zA-Z]*w/.test(arg));
      case 'hdparm':
        return (
          devices &&
          args.some((arg) =>
            /^--(?:security-erase|security-erase-enhanced|trim-sector-ranges|write-sector|make-bad-sector|fwdownload)/.test(
              arg,
            ),
          )
        );
      case 'sgdisk':
        return devices && args.some((arg) => /^(?:-[a-zA-Z]*[Zzo]|--zap-all|--zap|--clear|--delete|-d)/.test(arg));
      case 'sfdisk':
        return devices && !args.some((arg) => /^(?:-[lds]|--list|--dump|--show-size|--verify|-V)$/.test(arg));
      case 'parted':
        return devices && args.some((arg) => /^(?:mklabel|mktable|rm|mkpart|resizepart|rescue)$/.test(arg));
      case 'cryptsetup':
        return devices && args.some((arg) => /^(?:luksFormat|erase|luksErase|reencrypt)$/.test(arg));
      case 'nvme':
        return (args[0] === 'format' || args[0] === 'sanitize') && devices;
      case 'diskutil': {
        const [verb, sub] = operands(args);
        return (
          (verb !== undefined && DISKUTIL_ERASE.test(verb)) ||
          ((verb === 'apfs' || verb === 'ap') && sub !== undefined && APFS_ERASE.test(sub))
        );
      }
      default:
        return false;
    }
  });
}
