/* café menu */
#include <stdio.h>

int main(void) {
    puts("café au lait");
    puts("thé");
    puts("crème brûlée");
    return 0;
}
