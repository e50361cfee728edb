fn main() {
    let a = 5;
    let b = 2;
    println!("{}", a + b);
}

fn helper() -> u32 {
    41
}
