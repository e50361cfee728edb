fn a() {
    x();
}

fn b() {
    x();
}

fn c() {
    y();
}
