"""A host's paths as the inventory has them (sanlens.topology, kind = 'path'): per disk, the version in force at a
time, with its array volume, its HBA port, how it reaches the array (transport: fc or iscsi) and the load-balance
policy of the host's MPIO DSM for the disk. `./sanlens explain` reads it."""

from __future__ import annotations

# Per disk of host {host} (or of its disk {disk}; '' for every disk), the version of its path in force at {at}.
AS_OF = """
SELECT p.disk AS disk, concat(p.array, ':', p.volume) AS volume,
    if(p.transport = '', 'unknown', p.transport) AS transport,
    if(p.multipath_policy = '', 'unknown', p.multipath_policy) AS multipath_policy,
    p.host_port AS host_port, p.valid_from AS since
FROM sanlens.topology AS p FINAL
WHERE p.kind = 'path' AND p.host = {host:String} AND ({disk:String} = '' OR p.disk = {disk:String})
    AND p.valid_from <= {at:DateTime64(3)}
ORDER BY disk, since DESC
LIMIT 1 BY disk"""
