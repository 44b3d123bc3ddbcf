"""What one command costs: wall time and peak resident memory, read from /usr/bin/time (shared by the
benches that run a compiler per file beside ptxas)."""
import subprocess


def measure(cmd):
    """(seconds, peak MB) of `cmd` run to completion, or None if it failed."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    secs, kb = p.stderr.strip().splitlines()[-1].split()
    return float(secs), int(kb) / 1024
