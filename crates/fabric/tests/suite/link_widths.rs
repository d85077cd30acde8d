//! A port line whose width and speed token is malformed (`65536xQDR`, `1e9xFDR10`, `4xABC`)
//! is an error naming the line, in ibnetdiscover dumps and ibsim net files alike; valid and
//! unknown (`4x???`, `??`) tokens still read.

use fabric::io::{ibnetdiscover, ibsim};
use fabric::{BuildOptions, Width};

const DUMP: &str = "Switch\t4 \"S-0000000000000010\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n\
[1]\t\"H-0000000000000020\"[1](21) \t\t# \"h1\" lid 2 TOKEN\n\
[2]\t\"H-0000000000000030\"[1](31) \t\t# \"h2\" lid 3 4xEDR\n\
\n\
Ca\t1 \"H-0000000000000020\"\t\t# \"h1\"\n\
[1](21) \t\"S-0000000000000010\"[1]\t\t# lid 2 lmc 0 \"sw\" lid 1 TOKEN\n\
\n\
Ca\t1 \"H-0000000000000030\"\t\t# \"h2\"\n\
[1](31) \t\"S-0000000000000010\"[2]\t\t# lid 3 lmc 0 \"sw\" lid 1 4xEDR\n";

fn ibnd(token: &str) -> Result<fabric::io::Loaded, fabric::io::ParseError> {
    let text = DUMP.replace("TOKEN", token);
    ibnetdiscover::read(text.as_bytes(), "t.ibnd", BuildOptions::default())
}

#[test]
fn malformed_widths_are_located_errors() {
    for bad in ["65536xQDR", "1e9xFDR10", "4xABC", "3xEDR"] {
        let e = ibnd(bad).err().unwrap_or_else(|| panic!("{bad} accepted"));
        let m = e.to_string();
        assert!(m.contains("t.ibnd:2"), "{bad}: {m}");
        assert!(m.contains(bad) && m.contains("4xEDR"), "{bad}: {m}");
    }
    for good in ["4xHDR", "12xFDR10", "4x???"] {
        let l = ibnd(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        let f = l.fabric;
        let w = f.links.iter().map(|k| k.width).collect::<Vec<_>>();
        assert!(w.contains(&Width::X4) || w.contains(&Width::X12), "{good}");
    }
}

#[test]
fn ibsim_comments_are_checked_alike() {
    let net = "Switch\t2 \"sw\"\n[1]\t\"h\"[1]\t# \"h\" lid 2 65536xQDR\n\nHca\t1 \"h\"\n[1]\t\"sw\"[1]\n";
    let mut none = |n: &str| Err(format!("no include ({n})"));
    let Err(e) = ibsim::read(net.as_bytes(), "t.net", &mut none, BuildOptions::default()) else {
        panic!("65536xQDR accepted");
    };
    assert!(e.to_string().contains("t.net:2"), "{e}");
    assert!(e.to_string().contains("65536xQDR"), "{e}");
}
