//! Deflate, inflate and gzip with one (de)compressor per thread, format and level, reset between
//! uses. A fresh compressor allocates a few hundred KiB of tables, and every watch event and
//! every SWF decision compresses or inflates once: allocated fresh, those tables were fresh
//! pages to fault in and zero each time (a fifth of the controller's CPU in a mass rebuild went
//! to the kernel) and, freed across threads, fragmented the heap.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// What a compressed buffer is framed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Raw deflate (RFC 1951): the watch store, which only this process reads.
    Deflate,
    /// gzip (RFC 1952): the last-good record, which others may read.
    Gzip,
}

thread_local! {
    static COMPRESSORS: RefCell<Vec<(Format, u32, Compress)>> = const { RefCell::new(Vec::new()) };
    static INFLATER: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// `input` compressed at `level` (0-9).
pub fn compress(format: Format, level: u32, input: &[u8]) -> std::io::Result<Vec<u8>> {
    COMPRESSORS.with_borrow_mut(|compressors| {
        let index = match compressors
            .iter()
            .position(|(f, l, _)| *f == format && *l == level)
        {
            Some(index) => index,
            None => {
                let level = Compression::new(level);
                let compressor = match format {
                    Format::Deflate => Compress::new(level, false),
                    Format::Gzip => Compress::new_gzip(level, 15),
                };
                compressors.push((format, level.level(), compressor));
                compressors.len() - 1
            }
        };
        let compressor = &mut compressors[index].2;
        compressor.reset();
        let mut out = Vec::with_capacity(input.len() / 4 + 64);
        loop {
            let read = compressor.total_in() as usize;
            let status = compressor
                .compress_vec(&input[read..], &mut out, FlushCompress::Finish)
                .map_err(std::io::Error::other)?;
            if status == Status::StreamEnd {
                return Ok(out);
            }
            out.reserve(out.capacity().max(1024));
        }
    })
}

/// Raw deflate `input` inflated, refused past `limit` bytes.
pub fn inflate(input: &[u8], limit: usize) -> std::io::Result<Vec<u8>> {
    INFLATER.with_borrow_mut(|inflater| {
        let inflater = inflater.get_or_insert_with(|| Decompress::new(false));
        inflater.reset(false);
        let mut out = Vec::with_capacity((input.len() * 4).min(limit));
        loop {
            let (read, written) = (inflater.total_in() as usize, out.len());
            let status = inflater
                .decompress_vec(&input[read..], &mut out, FlushDecompress::Finish)
                .map_err(std::io::Error::other)?;
            if status == Status::StreamEnd {
                return Ok(out);
            }
            if out.len() >= limit {
                return Err(std::io::Error::other(format!(
                    "inflates past {limit} bytes"
                )));
            }
            // Room to write and nothing written: the input ends before the stream does.
            let stuck = inflater.total_in() as usize == read && out.len() == written;
            if stuck && out.len() < out.capacity() {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let room = out
                .capacity()
                .max(1024)
                .min(limit.saturating_add(1) - out.len());
            out.reserve(room);
        }
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    fn text() -> Vec<u8> {
        (0..5000)
            .map(|i| format!("{{\"name\":\"step-{i}\"}},"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn round_trips_again_and_again_on_one_thread() {
        for input in [text(), Vec::new(), b"x".to_vec(), text()] {
            let packed = compress(Format::Deflate, 1, &input).unwrap();
            assert_eq!(inflate(&packed, usize::MAX).unwrap(), input);
        }
    }

    #[test]
    fn gzip_is_read_by_a_plain_gzip_decoder() {
        for level in [1, 4, 9, 4] {
            let gzip = compress(Format::Gzip, level, &text()).unwrap();
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&gzip[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, text(), "level {level}");
        }
    }

    #[test]
    fn inflating_stops_at_the_limit_and_at_a_cut() {
        let packed = compress(Format::Deflate, 1, &text()).unwrap();
        let error = inflate(&packed, 1000).unwrap_err();
        assert!(error.to_string().contains("past 1000 bytes"), "{error}");
        assert!(inflate(&packed[..packed.len() / 2], usize::MAX).is_err());
        assert!(inflate(&[], usize::MAX).is_err());
        // A failure leaves nothing behind for the next use.
        assert_eq!(inflate(&packed, usize::MAX).unwrap(), text());
    }
}
