//! What an ELF header says about a binary that cannot run here: its class, byte order,
//! machine, and whether it asks for a program interpreter (a dynamic loader).

use anyhow::{Result, ensure};

/// `e_machine` values (the System V ABI's registry).
pub const X86_64: u16 = 62;
pub const AARCH64: u16 = 183;
/// `p_type` of the program header naming the dynamic loader.
const PT_INTERP: u32 = 3;

#[derive(Debug, PartialEq, Eq)]
pub struct Header {
    pub machine: u16,
    /// Executable (`ET_EXEC`) or position-independent (`ET_DYN`).
    pub kind: u16,
    pub interpreter: bool,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads a 64-bit little-endian ELF file's header and program headers.
pub fn read(bytes: &[u8]) -> Result<Header> {
    ensure!(
        bytes.len() >= 64 && bytes[..4] == *b"\x7fELF",
        "not an ELF file"
    );
    ensure!(bytes[4] == 2, "not 64-bit (EI_CLASS {})", bytes[4]);
    ensure!(bytes[5] == 1, "not little-endian (EI_DATA {})", bytes[5]);
    let (kind, machine) = (u16_at(bytes, 16), u16_at(bytes, 18));
    let offset = usize::try_from(u64_at(bytes, 32))?;
    let (size, count) = (
        usize::from(u16_at(bytes, 54)),
        usize::from(u16_at(bytes, 56)),
    );
    ensure!(
        size >= 4 && offset + size * count <= bytes.len(),
        "program headers outside the file"
    );
    let interpreter = (0..count).any(|i| u32_at(bytes, offset + i * size) == PT_INTERP);
    Ok(Header {
        machine,
        kind,
        interpreter,
    })
}
