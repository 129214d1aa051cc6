#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Writes the crafted config-space dumps in this directory.

The dumps are committed; this script documents how each register was set
and regenerates them: tests/topo/mkdump.py tests/topo
Output is `lspci -xxxx' text, which libpci's dump method reads back.
"""
import os
import struct
import sys

# ACS bits (PCIe 7.7.8)
SV, TB, RR, CR, UF, EC, DT = 1, 2, 4, 8, 0x10, 0x20, 0x40
ENDPOINT, ROOT_PORT, UPSTREAM, DOWNSTREAM = 0, 4, 5, 6


class Dev:
    def __init__(self, bdf, vendor, device, cls, name, bridge=False):
        self.bdf, self.name = bdf, name
        self.c = bytearray(4096)
        struct.pack_into('<HH', self.c, 0, vendor, device)
        struct.pack_into('<H', self.c, 4, 0x0407)       # mem, bus master
        struct.pack_into('<H', self.c, 6, 0x0010)       # capability list
        self.c[0x0a], self.c[0x0b] = cls & 0xff, cls >> 8
        self.c[0x0e] = 1 if bridge else 0
        self.c[0x34] = 0x40
        # power management at 0x40 -> PCIe at 0x60
        self.c[0x40:0x44] = bytes([0x01, 0x60, 0x03, 0x00])
        self.ext = []

    def bus(self, pri, sec, sub):
        self.c[0x18], self.c[0x19], self.c[0x1a] = pri, sec, sub
        return self

    def pcie(self, ptype, max_speed, max_width, speed, width):
        c = self.c
        c[0x60], c[0x61] = 0x10, 0x00
        struct.pack_into('<H', c, 0x62, 0x2 | ptype << 4)
        struct.pack_into('<I', c, 0x6c, max_speed | max_width << 4)
        struct.pack_into('<H', c, 0x72, speed | width << 4)
        return self

    def acs(self, cap, ctrl):
        self.ext.append((0x0d, 1, struct.pack('<HH', cap, ctrl)))
        return self

    def rebar(self, bar, sup_mib, cur_mib):
        sup = 0
        for m in sup_mib:
            sup |= 1 << (m.bit_length() - 1 + 4)
        ctrl = bar | 1 << 5 | (cur_mib.bit_length() - 1) << 8
        self.ext.append((0x15, 1, struct.pack('<II', sup, ctrl)))
        return self

    def aer(self):
        self.ext.append((0x01, 2, bytes(0x44)))
        return self

    def bars_gpu(self, bar0, bar1, bar3):
        struct.pack_into('<I', self.c, 0x10, bar0)
        struct.pack_into('<Q', self.c, 0x14, bar1 | 0xc)
        struct.pack_into('<Q', self.c, 0x1c, bar3 | 0xc)
        struct.pack_into('<I', self.c, 0x24, 0xe001)
        return self

    def text(self):
        pos = 0x100
        for i, (cid, ver, body) in enumerate(self.ext):
            nxt = pos + 4 + len(body)
            nxt = (nxt + 3) & ~3
            if i == len(self.ext) - 1:
                nxt = 0
            struct.pack_into('<I', self.c, pos, cid | ver << 16 | nxt << 20)
            self.c[pos + 4:pos + 4 + len(body)] = body
            pos = nxt
        out = [f'{self.bdf} {self.name}']
        for off in range(0, 4096, 16):
            row = ' '.join(f'{b:02x}' for b in self.c[off:off + 16])
            out.append(f'{off:02x}: {row}')
        return '\n'.join(out) + '\n\n'


def host_bridge():
    d = Dev('00:00.0', 0x8086, 0x09a2, 0x0600, 'Host bridge: Intel Corporation Device 09a2')
    d.c[0x06] = 0  # no capabilities
    return d


def gpu5090(bdf, bar1, rebar_cur, speed=5, width=16):
    return (Dev(bdf, 0x10de, 0x2b85, 0x0300, 'VGA compatible controller: NVIDIA Corporation GB202 [GeForce RTX 5090]')
            .pcie(ENDPOINT, 5, 16, speed, width)
            .bars_gpu(0xa0000000 + (bar1 >> 32 & 0x7) * 0x04000000, bar1, bar1 + (64 << 30))
            .aer()
            .rebar(1, [64 << k for k in range(10)], rebar_cur))


def gpu_audio(bdf):
    return Dev(bdf, 0x10de, 0x22e8, 0x0403, 'Audio device: NVIDIA Corporation Device 22e8').pcie(ENDPOINT, 5, 16, 5, 16)


def cx7(bdf):
    return Dev(bdf, 0x15b3, 0x1021, 0x0207, 'Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]').pcie(ENDPOINT, 5, 16, 5, 16).aer()


def root_port(bdf, sec, sub, acs_ctrl=0):
    return (Dev(bdf, 0x8086, 0x347a, 0x0604, 'PCI bridge: Intel Corporation Device 347a', bridge=True)
            .bus(0, sec, sub).pcie(ROOT_PORT, 5, 16, 5, 16)
            .acs(SV | RR | CR | UF | TB, acs_ctrl))


def switch_up(bdf, pri, sec, sub):
    return (Dev(bdf, 0x1000, 0xc030, 0x0604, 'PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch', bridge=True)
            .bus(pri, sec, sub).pcie(UPSTREAM, 5, 16, 5, 16))


def switch_down(bdf, pri, sec, sub, acs_ctrl):
    return (Dev(bdf, 0x1000, 0xc030, 0x0604, 'PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch', bridge=True)
            .bus(pri, sec, sub).pcie(DOWNSTREAM, 5, 16, 5, 16)
            .acs(SV | RR | CR | UF | EC | DT, acs_ctrl))


def bridge(bdf, vendor, device, name, ptype, sec, sub, max_speed, max_width, speed=None, width=None):
    """A PCIe bridge by its real ids (the names are pci.ids' or lspci -nn's)."""
    return (Dev(bdf, vendor, device, 0x0604, 'PCI bridge: ' + name, bridge=True)
            .bus(int(bdf[:2], 16), sec, sub)
            .pcie(ptype, max_speed, max_width, speed or max_speed, width or max_width))


def gpu5090_at(bdf, bar1, speed, width):
    return gpu5090(bdf, bar1, 32 * 1024, speed=speed, width=width)


def write(path, devs):
    with open(path, 'w') as f:
        for d in devs:
            f.write(d.text())


def main(outdir):

    # Two 5090s behind a Gen5 switch whose first downstream port has ACS
    # redirect enabled, one 5090 on its own root port with a degraded link
    # (x8 at 8 GT/s) and BAR1 left at 256 MiB, a ConnectX-7 on a third root
    # port. The switched GPUs have their full 32 GiB BAR1.
    write(os.path.join(outdir, '5090-switch.dump'), [
        host_bridge(),
        root_port('00:01.0', 1, 4, SV | RR | CR | UF),
        switch_up('01:00.0', 1, 2, 4),
        switch_down('02:00.0', 2, 3, 3, SV | RR | CR | UF),
        switch_down('02:01.0', 2, 4, 4, 0),
        gpu5090('03:00.0', 0x4000000000, 32 * 1024),
        gpu_audio('03:00.1'),
        gpu5090('04:00.0', 0x4800000000, 32 * 1024),
        root_port('00:02.0', 5, 5),
        gpu5090('05:00.0', 0x5000000000, 256, speed=3, width=8),
        root_port('00:03.0', 6, 6),
        cx7('06:00.0'),
    ])
    # The clean case: same switch, no ACS, full BAR1, full links.
    write(os.path.join(outdir, '5090-clean.dump'), [
        host_bridge(),
        root_port('00:01.0', 1, 4),
        switch_up('01:00.0', 1, 2, 4),
        switch_down('02:00.0', 2, 3, 3, 0),
        switch_down('02:01.0', 2, 4, 4, 0),
        gpu5090('03:00.0', 0x4000000000, 32 * 1024),
        gpu5090('04:00.0', 0x4800000000, 32 * 1024),
    ])
    # A single 5090, ReBAR capable to 32 GiB; the BIOS left BAR1 at 256 MiB.
    write(os.path.join(outdir, '5090-rebar256.dump'), [
        host_bridge(),
        root_port('00:01.0', 1, 1),
        gpu5090('01:00.0', 0x4000000000, 256),
    ])
    # Slot classes (check/topo.c nvs_topo_slot). An AM5 board: one 5090 on
    # the CPU's GPP root port, one behind the 600 series chipset (Promontory
    # 21: upstream 43f4 on a Gen4 x4 uplink, downstream 43f5), as AM5
    # boards' `lspci -nn' shows them.
    write(os.path.join(outdir, 'amd-chipset.dump'), [
        Dev('00:00.0', 0x1022, 0x14d8, 0x0600, 'Host bridge: Advanced Micro Devices, Inc. [AMD] Raphael/Granite Ridge Root Complex'),
        bridge('00:01.1', 0x1022, 0x14db, 'Advanced Micro Devices, Inc. [AMD] Raphael/Granite Ridge GPP Bridge',
               ROOT_PORT, 1, 1, 5, 16),
        gpu5090_at('01:00.0', 0x4000000000, 5, 16),
        bridge('00:02.1', 0x1022, 0x14db, 'Advanced Micro Devices, Inc. [AMD] Raphael/Granite Ridge GPP Bridge',
               ROOT_PORT, 2, 4, 4, 4),
        bridge('02:00.0', 0x1022, 0x43f4, 'Advanced Micro Devices, Inc. [AMD] 600 Series Chipset PCIe Switch Upstream Port',
               UPSTREAM, 3, 4, 4, 4),
        bridge('03:08.0', 0x1022, 0x43f5, 'Advanced Micro Devices, Inc. [AMD] 600 Series Chipset PCIe Switch Downstream Port',
               DOWNSTREAM, 4, 4, 4, 4),
        gpu5090_at('04:00.0', 0x4800000000, 4, 4),
    ])
    # A Raptor Lake board: one 5090 on the CPU's PEG port (00:01.0 a70d),
    # one in a PCH slot (root port #1, 00:1c.0 7a38, Gen4 x4), where the
    # PCH's root ports sit on bus 0 beside the CPU's.
    write(os.path.join(outdir, 'intel-pch.dump'), [
        Dev('00:00.0', 0x8086, 0xa700, 0x0600, 'Host bridge: Intel Corporation Raptor Lake-S Host Bridge/DRAM Controller'),
        bridge('00:01.0', 0x8086, 0xa70d, 'Intel Corporation Raptor Lake PCI Express 5.0 Graphics Port (PEG010)',
               ROOT_PORT, 1, 1, 5, 16),
        gpu5090_at('01:00.0', 0x4000000000, 5, 16),
        bridge('00:1c.0', 0x8086, 0x7a38, 'Intel Corporation Raptor Lake PCI Express Root Port #1',
               ROOT_PORT, 2, 2, 4, 4),
        gpu5090_at('02:00.0', 0x4800000000, 4, 4),
    ])
    # Unreadable data shapes for the error paths.
    with open(os.path.join(outdir, 'garbage.dump'), 'w') as f:
        f.write('this is not lspci output\nnor is this\n')
    with open(os.path.join(outdir, 'binary.dump'), 'wb') as f:
        f.write(bytes(range(256)) * 4)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
