fn main() {
    let a = 1;
    let b = 3;
    println!("{}", a + b);
}

fn helper() -> u32 {
    42
}
