//! Fabrics and tables for the simulator's tests: fabroute's own generators and engines.

#![allow(dead_code)]

use fabric::{Fabric, FaultMask};
use routing::engines::{by_name, RouteOptions};
use routing::Routing;

pub fn fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .expect("spec")
        .generate()
        .expect("fabric")
}

pub fn route(f: &Fabric, engine: &str) -> Routing {
    by_name(engine)
        .expect("engine")
        .route(f, &FaultMask::none(f), &RouteOptions::default())
        .expect("routed")
}
