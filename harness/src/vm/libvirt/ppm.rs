//! libvirt's screenshots of QEMU guests come as binary PPM (P6); the run directory keeps PNG,
//! like the QEMU backend's `screendump`.

use std::path::Path;

/// Width, height and the RGB bytes of a binary PPM with 8-bit channels.
pub fn parse_p6(data: &[u8]) -> Result<(u32, u32, &[u8]), String> {
    // Header: "P6", width, height, maxval, separated by whitespace (comments start with '#'),
    // then exactly one whitespace byte before the pixels.
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while i < data.len() && (data[i].is_ascii_whitespace() || data[i] == b'#') {
            if data[i] == b'#' {
                while i < data.len() && data[i] != b'\n' {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        let start = i;
        while i < data.len() && !data[i].is_ascii_whitespace() {
            i += 1;
        }
        if start == i {
            return Err("truncated PPM header".into());
        }
        fields.push(std::str::from_utf8(&data[start..i]).map_err(|e| e.to_string())?);
    }
    if fields[0] != "P6" {
        return Err(format!("not a binary PPM (magic {:?})", fields[0]));
    }
    let num = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("bad PPM number {s:?}"))
    };
    let (w, h, max) = (num(fields[1])?, num(fields[2])?, num(fields[3])?);
    if max != 255 {
        return Err(format!("PPM with maxval {max}, only 255 is supported"));
    }
    let pixels = data.get(i + 1..).unwrap_or_default();
    let need = w as usize * h as usize * 3;
    if pixels.len() < need {
        return Err(format!(
            "PPM of {w}x{h} has {} bytes of pixels, needs {need}",
            pixels.len()
        ));
    }
    Ok((w, h, &pixels[..need]))
}

pub fn write_png_from_ppm(ppm: &[u8], png_path: &Path) -> Result<(), String> {
    let (w, h, rgb) = parse_p6(ppm)?;
    let file = std::fs::File::create(png_path).map_err(|e| e.to_string())?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_p6_image_becomes_a_png_with_the_same_pixels() {
        let mut ppm = b"P6\n# QEMU\n2 1\n255\n".to_vec();
        ppm.extend_from_slice(&[255, 0, 0, 0, 0, 255]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.png");
        write_png_from_ppm(&ppm, &out).unwrap();
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(&buf[..6], &[255, 0, 0, 0, 0, 255]);
    }

    #[test]
    fn broken_ppm_is_an_error_not_a_panic() {
        assert!(parse_p6(b"").is_err());
        assert!(parse_p6(b"P5\n1 1\n255\n\0").is_err());
        assert!(parse_p6(b"P6\n2 2\n255\n\0\0\0")
            .unwrap_err()
            .contains("needs 12"));
        assert!(parse_p6(b"P6\n1 1\n65535\n\0\0\0\0\0\0").is_err());
    }
}
