import { execa } from 'execa';
const ws = '/tmp/sbx-proto/ws3';
const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--bind', ws, ws, '--unshare-all', '--die-with-parent', '--new-session', '--chdir', ws, '--', '/bin/bash', '-c', 'true'];
await execa('bwrap', args);
const times: number[] = [];
for (let i = 0; i < 20; i++) { const t = performance.now(); await execa('bwrap', args, { detached: true, stdin: 'ignore' }); times.push(performance.now() - t); }
times.sort((a, b) => a - b);
console.log('old bwrap median ms', times[10].toFixed(1), 'min', times[0].toFixed(1));
