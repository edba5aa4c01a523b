//! A classic-BPF program from a list of rules: "this system call, when all these argument
//! conditions hold, returns this". Each rule compiles to one self-contained block whose
//! jumps stay inside it, so no jump offset can overflow however many rules there are.

use libc::sock_filter;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
/// System call numbers with this bit set are the x32 ABI on x86_64.
const X32_BIT: u32 = 0x4000_0000;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
/// Offsets into `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;

/// A jump offset meaning "to the end of this rule's block" until [`Rule::block`] fills it.
const END: u8 = u8::MAX;

/// A condition on one argument (0-based). "Low" is the argument's low 32 bits, which is all
/// the kernel reads of an `int`, `pid_t` or `unsigned int` argument.
#[derive(Debug, Clone)]
pub enum Cond {
    /// `low & mask` is one of `values`.
    MaskedIn {
        arg: u32,
        mask: u32,
        values: Vec<u32>,
    },
    /// `low & mask != 0`.
    AnyBit { arg: u32, mask: u32 },
    /// `low != value`.
    NotEqual { arg: u32, value: u32 },
    /// `low != 0`.
    LowNonZero { arg: u32 },
    /// The whole 64-bit argument (a pointer) is not null.
    NonZero64 { arg: u32 },
}

/// One system call refused (or answered) when every condition holds.
#[derive(Debug, Clone)]
pub struct Rule {
    nr: u32,
    conds: Vec<Cond>,
    ret: u32,
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn low(arg: u32) -> u32 {
    ARGS + 8 * arg
}

/// The upper half of an argument; the architectures built here are little-endian.
fn high(arg: u32) -> u32 {
    ARGS + 8 * arg + 4
}

impl Cond {
    /// Instructions that fall through when the condition holds and jump to [`END`] when
    /// it does not.
    fn code(&self) -> Vec<sock_filter> {
        match self {
            Cond::MaskedIn { arg, mask, values } => {
                let mut out = vec![stmt(LD_W_ABS, low(*arg))];
                if *mask != u32::MAX {
                    out.push(stmt(AND_K, *mask));
                }
                let n = values.len();
                for (i, v) in values.iter().enumerate() {
                    let rest = u8::try_from(n - i - 1).unwrap_or(0);
                    if i + 1 == n {
                        out.push(jump(JEQ_K, *v, 0, END));
                    } else {
                        out.push(jump(JEQ_K, *v, rest, 0));
                    }
                }
                out
            }
            Cond::AnyBit { arg, mask } => {
                vec![stmt(LD_W_ABS, low(*arg)), jump(JSET_K, *mask, 0, END)]
            }
            Cond::NotEqual { arg, value } => {
                vec![stmt(LD_W_ABS, low(*arg)), jump(JEQ_K, *value, END, 0)]
            }
            Cond::LowNonZero { arg } => vec![stmt(LD_W_ABS, low(*arg)), jump(JEQ_K, 0, END, 0)],
            Cond::NonZero64 { arg } => vec![
                stmt(LD_W_ABS, low(*arg)),
                jump(JEQ_K, 0, 0, 2),
                stmt(LD_W_ABS, high(*arg)),
                jump(JEQ_K, 0, END, 0),
            ],
        }
    }
}

impl Rule {
    pub fn new(nr: u32, conds: Vec<Cond>, ret: u32) -> Rule {
        Rule { nr, conds, ret }
    }

    /// `load nr; if nr != self.nr skip; conditions...; return ret`, with every [`END`]
    /// resolved to the instruction after the block. None when the block is too long for
    /// an 8-bit jump.
    fn block(&self) -> Option<Vec<sock_filter>> {
        let mut body: Vec<sock_filter> = self.conds.iter().flat_map(Cond::code).collect();
        body.push(stmt(RET_K, self.ret));
        let len = body.len();
        for (i, insn) in body.iter_mut().enumerate() {
            let to_end = u8::try_from(len - i - 1).ok()?;
            if insn.code & 0x07 == libc::BPF_JMP as u16 {
                if insn.jt == END {
                    insn.jt = to_end;
                }
                if insn.jf == END {
                    insn.jf = to_end;
                }
            }
        }
        let mut out = vec![
            stmt(LD_W_ABS, NR),
            jump(JEQ_K, self.nr, 0, u8::try_from(len).ok()?),
        ];
        out.extend(body);
        Some(out)
    }
}

/// The whole program: foreign architectures and x32 refused, then every rule, then allow.
/// None when a rule cannot be compiled or the program is longer than the kernel takes.
pub fn program(rules: &[Rule]) -> Option<Vec<sock_filter>> {
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let mut out = vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ_K, NATIVE_ARCH, 1, 0),
        stmt(RET_K, eperm),
        stmt(LD_W_ABS, NR),
        jump(JGE_K, X32_BIT, 0, 1),
        stmt(RET_K, eperm),
    ];
    for rule in rules {
        out.extend(rule.block()?);
    }
    out.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
    (out.len() <= usize::from(u16::MAX).min(4096)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one `seccomp_data`, as the kernel would.
    fn eval(prog: &[sock_filter], nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&NATIVE_ARCH.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let word = |k: u32| {
            let k = k as usize;
            u32::from_le_bytes([data[k], data[k + 1], data[k + 2], data[k + 3]])
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            match i.code {
                LD_W_ABS => acc = word(i.k),
                AND_K => acc &= i.k,
                RET_K => return i.k,
                JEQ_K | JGE_K | JSET_K => {
                    let taken = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                other => panic!("unexpected instruction {other}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn conditions_decide_as_written() {
        let deny = libc::SECCOMP_RET_ERRNO | 1;
        let rules = vec![
            Rule::new(
                10,
                vec![Cond::MaskedIn {
                    arg: 1,
                    mask: 0xf000,
                    values: vec![0x2000, 0x6000],
                }],
                deny,
            ),
            Rule::new(
                11,
                vec![Cond::LowNonZero { arg: 0 }, Cond::NonZero64 { arg: 2 }],
                deny,
            ),
            Rule::new(12, vec![Cond::AnyBit { arg: 0, mask: 0x10 }], deny),
            Rule::new(13, vec![Cond::NotEqual { arg: 0, value: 16 }], deny),
            Rule::new(14, vec![], deny),
        ];
        let p = program(&rules).expect("compiles");
        let allow = libc::SECCOMP_RET_ALLOW;
        assert_eq!(eval(&p, 10, [0, 0x21ff, 0, 0, 0, 0]), deny);
        assert_eq!(eval(&p, 10, [0, 0x61a4, 0, 0, 0, 0]), deny);
        assert_eq!(eval(&p, 10, [0, 0x11a4, 0, 0, 0, 0]), allow);
        assert_eq!(eval(&p, 11, [5, 0, 1 << 40, 0, 0, 0]), deny);
        assert_eq!(eval(&p, 11, [5, 0, 0, 0, 0, 0]), allow);
        assert_eq!(eval(&p, 11, [0, 0, 7, 0, 0, 0]), allow);
        assert_eq!(eval(&p, 12, [0x11, 0, 0, 0, 0, 0]), deny);
        assert_eq!(eval(&p, 12, [0x01, 0, 0, 0, 0, 0]), allow);
        assert_eq!(eval(&p, 13, [16, 0, 0, 0, 0, 0]), allow);
        assert_eq!(eval(&p, 13, [1, 0, 0, 0, 0, 0]), deny);
        assert_eq!(eval(&p, 14, [0; 6]), deny);
        assert_eq!(eval(&p, 15, [0; 6]), allow);
    }
}
