//! A multiboot kernel of a few bytes that prints a banner on COM1 and then echoes every byte it
//! receives there: a guest whose serial console answers, booted with QEMU's `-kernel` in
//! seconds under TCG, with no disk image. Used by the libvirt console stream's unit test
//! (through `#[path]`) and by the interactive console's tests.

#![allow(dead_code)]

pub const BANNER: &str = "sno-harness test kernel: serial console up";
/// Where QEMU's multiboot loader puts the image.
const LOAD: u32 = 0x10_0000;

/// A multiboot image (QEMU boots it with `-kernel`, `<kernel>` in the domain): it prints
/// `BANNER` on COM1, then echoes every byte it receives. 32-bit code, assembled by hand
/// from the listing beside it.
pub fn test_kernel() -> Vec<u8> {
    const MAGIC: u32 = 0x1BAD_B002;
    // Bit 16: the load addresses below are valid (a flat image, not ELF).
    const FLAGS: u32 = 0x0001_0000;
    const HEADER_LEN: u32 = 32;
    let mut code: Vec<u8> = vec![
        0xbc, 0x00, 0x00, 0x08, 0x00, //       mov  $0x80000, %esp
        0xbe, 0, 0, 0, 0,    //                   mov  $BANNER, %esi (patched below)
        0xac, //                        1:     lodsb
        0x84, 0xc0, //                         test %al, %al
        0x74, 0x07, //                         jz   echo
        0xe8, 0x17, 0x00, 0x00, 0x00, //       call putc
        0xeb, 0xf4, //                         jmp  1b
        0x66, 0xba, 0xfd, 0x03, //      echo:  mov  $0x3fd, %dx   (line status)
        0xec, //                        2:     in   %dx, %al
        0xa8, 0x01, //                         test $1, %al        (data ready)
        0x74, 0xfb, //                         jz   2b
        0x66, 0xba, 0xf8, 0x03, //             mov  $0x3f8, %dx   (data)
        0xec, //                               in   %dx, %al
        0xe8, 0x02, 0x00, 0x00, 0x00, //       call putc
        0xeb, 0xeb, //                         jmp  echo
        0x88, 0xc4, //                  putc:  mov  %al, %ah
        0x66, 0xba, 0xfd, 0x03, //             mov  $0x3fd, %dx
        0xec, //                        3:     in   %dx, %al
        0xa8, 0x20, //                         test $0x20, %al     (transmitter empty)
        0x74, 0xfb, //                         jz   3b
        0x88, 0xe0, //                         mov  %ah, %al
        0x66, 0xba, 0xf8, 0x03, //             mov  $0x3f8, %dx
        0xee, //                               out  %al, %dx
        0xc3, //                               ret
    ];
    let banner_addr = LOAD + HEADER_LEN + code.len() as u32;
    code[6..10].copy_from_slice(&banner_addr.to_le_bytes());
    let mut image = Vec::new();
    for word in [
        MAGIC,
        FLAGS,
        0u32.wrapping_sub(MAGIC.wrapping_add(FLAGS)), // checksum
        LOAD,              // header_addr: the header is the image's first byte
        LOAD,              // load_addr
        0,                 // load_end_addr: the whole file
        0,                 // bss_end_addr: none
        LOAD + HEADER_LEN, // entry_addr: the code right after the header
    ] {
        image.extend_from_slice(&word.to_le_bytes());
    }
    image.extend_from_slice(&code);
    image.extend_from_slice(BANNER.as_bytes());
    image.extend_from_slice(b"\r\n\0");
    image
}
