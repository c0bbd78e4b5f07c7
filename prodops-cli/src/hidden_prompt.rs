//! Reading a secret at a terminal (`prodops auth login`): nothing typed is ever shown.
//!
//! Echo is turned off *before* the prompt is written. rpassword writes the prompt first and
//! turns echo off only when it starts reading, so a key pasted as soon as the prompt appears
//! (or typed ahead) was echoed by the terminal in that gap; the pseudo-terminal test of
//! `auth login` caught it. Ctrl-C leaves the terminal as it was and answers `Interrupted`.

use std::io;

/// Writes `prompt` to the terminal and reads one line from it with echo off.
pub fn read_hidden(prompt: &str) -> io::Result<String> {
    #[cfg(unix)]
    {
        unix::read_hidden(prompt)
    }
    #[cfg(not(unix))]
    {
        rpassword::prompt_password(prompt)
    }
}

#[cfg(unix)]
mod unix {
    use std::fs::{File, OpenOptions};
    use std::io::{self, Read, Write};

    use rustix::termios::{
        LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr,
    };

    /// Puts the terminal's modes back however the read ends.
    struct Restore<'a> {
        tty: &'a File,
        saved: Termios,
    }

    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = tcsetattr(self.tty, OptionalActions::Now, &self.saved);
        }
    }

    pub fn read_hidden(prompt: &str) -> io::Result<String> {
        let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
        let saved = tcgetattr(&tty)?;
        let mut quiet = saved.clone();
        // No echo; characters one at a time (so Ctrl-C and erase are ours to handle, and the
        // terminal is restored before the process ends).
        quiet
            .local_modes
            .remove(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG);
        quiet.special_codes[SpecialCodeIndex::VMIN] = 1;
        quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
        // `Now`, not `Flush`: what was typed ahead stays to be read, unseen.
        tcsetattr(&tty, OptionalActions::Now, &quiet)?;
        let restore = Restore { tty: &tty, saved };
        (&tty).write_all(prompt.as_bytes())?;
        (&tty).flush()?;
        let line = read_line(&tty);
        drop(restore);
        (&tty).write_all(b"\n")?;
        line
    }

    fn read_line(mut tty: &File) -> io::Result<String> {
        let mut bytes = Vec::new();
        let mut one = [0u8; 1];
        loop {
            if tty.read(&mut one)? == 0 {
                break;
            }
            match one[0] {
                b'\n' | b'\r' => break,
                // Ctrl-C
                0x03 => return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted")),
                // Ctrl-D on an empty line
                0x04 if bytes.is_empty() => {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "end of input"));
                }
                // Backspace or DEL: drop the last character, all its UTF-8 bytes.
                0x7f | 0x08 => {
                    while let Some(b) = bytes.pop() {
                        if b & 0xC0 != 0x80 {
                            break;
                        }
                    }
                }
                // Ctrl-U: start the line again.
                0x15 => bytes.clear(),
                b => bytes.push(b),
            }
        }
        String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}
