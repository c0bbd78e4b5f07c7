//! `prodops` on a pseudo-terminal (portable-pty): what a person at a terminal sees and types.
//! A blocking API; call it inside `spawn_blocking` when the test's server runs on the runtime.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

/// How long a prompt or the end of the process may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(300);

/// A process on a pseudo-terminal of a given size.
pub struct Terminal {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    chunks: Receiver<Vec<u8>>,
    /// What the terminal showed and no `expect` consumed yet (bytes: a character may arrive
    /// in two reads).
    unread: Vec<u8>,
    // Held so that the terminal stays open until the process is done.
    _master: Box<dyn MasterPty + Send>,
}

impl Terminal {
    /// Starts `command` on a terminal `cols` wide and 50 rows high.
    pub fn spawn(command: CommandBuilder, cols: u16) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let child = pair.slave.spawn_command(command).expect("prodops starts");
        // The child holds the only slave end: the master reads EIO once it is gone.
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (send, chunks) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || send.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            child,
            writer,
            chunks,
            unread: Vec::new(),
            _master: pair.master,
        }
    }

    /// Waits until the terminal shows `text`; answers everything shown up to and including it.
    pub fn expect(&mut self, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let wanted = text.as_bytes();
            if let Some(at) = self.unread.windows(wanted.len()).position(|w| w == wanted) {
                let rest = self.unread.split_off(at + wanted.len());
                return shown(&std::mem::replace(&mut self.unread, rest));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(bytes) => self.unread.extend_from_slice(&bytes),
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "{text:?} not shown within {PATIENCE:?}; shown: {}",
                        shown(&self.unread)
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "the process ended without showing {text:?}; shown: {}",
                        shown(&self.unread)
                    )
                }
            }
        }
    }

    /// Types `line` and Enter.
    pub fn send_line(&mut self, line: &str) {
        self.send(&format!("{line}\n"));
    }

    /// Types `keys` as they are (`"\x03"` is Ctrl-C).
    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to end; answers what it showed since the last `expect` and its
    /// exit code.
    pub fn finish(mut self) -> (String, u32) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(bytes) => self.unread.extend_from_slice(&bytes),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!(
                        "the process did not end within {PATIENCE:?}; shown: {}",
                        shown(&self.unread)
                    )
                }
            }
        }
        let status = self.child.wait().expect("the process ends");
        (shown(&self.unread), status.exit_code())
    }
}

/// Terminal output as text; a terminal ends lines with CR LF, tests read them as `\n`.
fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n")
}
